// Package stt turns voice notes into text through an OpenAI-compatible
// speech-to-text endpoint (POST {baseUrl}/audio/transcriptions, multipart
// "file" and "model"): OpenAI itself, Groq, a local whisper server.
package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "whisper-1"
	DefaultTimeout = 60 * time.Second
	// MaxBytes is the largest upload OpenAI's endpoint takes (25 MB).
	MaxBytes = 25 << 20
)

// Config reaches a transcription endpoint. It is off (Enabled false) until
// a base URL or an API key is set.
type Config struct {
	// BaseURL is the OpenAI-style base that already ends in /v1.
	BaseURL string `json:"baseUrl,omitempty"`
	Model   string `json:"model,omitempty"`
	APIKey  string `json:"apiKey,omitempty"`
	// Language, when set (ISO-639-1, "zh"), is passed on as a hint.
	Language       string `json:"language,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
}

// Enabled reports whether transcription is configured.
func (c Config) Enabled() bool { return c.BaseURL != "" || c.APIKey != "" }

// Normalized fills in the defaults of an enabled configuration.
func (c Config) Normalized() Config {
	if !c.Enabled() {
		return c
	}
	c.BaseURL = strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.TimeoutSeconds <= 0 {
		c.TimeoutSeconds = int(DefaultTimeout / time.Second)
	}
	return c
}

// Validate reports a base URL that is not http(s), naming the setting.
func (c Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	c = c.Normalized()
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("stt.baseUrl (STT_BASE_URL) must be an http(s) URL that ends in /v1, such as https://api.openai.com/v1")
	}
	if c.TimeoutSeconds > 600 {
		return fmt.Errorf("stt.timeoutSeconds %d is above 600", c.TimeoutSeconds)
	}
	return nil
}

// Client calls the endpoint. It is safe for concurrent use.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client for c, or nil when c is not enabled.
func New(c Config) (*Client, error) {
	if !c.Enabled() {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c = c.Normalized()
	return &Client{cfg: c, http: &http.Client{Timeout: time.Duration(c.TimeoutSeconds) * time.Second}}, nil
}

// Error is a failed transcription. Its text never holds the API key.
type Error struct {
	// Status is the HTTP status (0: no answer, e.g. a timeout).
	Status int
	msg    string
}

func (e *Error) Error() string { return e.msg }

// Transcribe sends one audio file and returns its text. name's extension
// tells the endpoint the format (OpenAI takes flac, m4a, mp3, mp4, mpeg,
// mpga, oga, ogg, wav and webm); audio longer than MaxBytes is refused
// before anything is sent.
func (c *Client) Transcribe(ctx context.Context, name string, audio []byte) (string, error) {
	if len(audio) > MaxBytes {
		return "", &Error{msg: fmt.Sprintf("transcribing: the audio is %d bytes, over the endpoint's %d byte limit", len(audio), MaxBytes)}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fields := [][2]string{{"model", c.cfg.Model}, {"response_format", "json"}}
	if c.cfg.Language != "" {
		fields = append(fields, [2]string{"language", c.cfg.Language})
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return "", fmt.Errorf("transcribing: %w", err)
		}
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return "", fmt.Errorf("transcribing: %w", err)
	}
	if _, err := fw.Write(audio); err != nil {
		return "", fmt.Errorf("transcribing: %w", err)
	}
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("transcribing: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+"/audio/transcriptions", &body)
	if err != nil {
		return "", c.fail(0, fmt.Sprintf("transcribing: %v", err))
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("transcribing: %w", ctx.Err())
		}
		return "", c.fail(0, fmt.Sprintf("transcribing: %v", err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", c.fail(resp.StatusCode, fmt.Sprintf("transcribing: reading the answer: %v", err))
	}
	if resp.StatusCode != http.StatusOK {
		return "", c.fail(resp.StatusCode, fmt.Sprintf("transcribing: the endpoint answered %d: %s", resp.StatusCode, errorText(raw)))
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Text == nil {
		return "", c.fail(resp.StatusCode, "transcribing: the endpoint's answer has no text")
	}
	return strings.TrimSpace(*out.Text), nil
}

// fail builds an Error whose text cannot carry the key, whatever the
// endpoint or the transport echoed.
func (c *Client) fail(status int, msg string) *Error {
	if c.cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, c.cfg.APIKey, "<stt-key>")
	}
	return &Error{Status: status, msg: msg}
}

// errorText is the message of an OpenAI-style error body, cut short.
func errorText(raw []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	s := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		s = e.Error.Message
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	if s == "" {
		s = "(no message)"
	}
	return s
}
