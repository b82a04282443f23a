// Package shipclient talks to a running ship over its HTTP API: it runs turns
// with POST /api/execute and reads their streamed events,
// reads a chat's messages, the server's status and its liveness. It is the
// client side of `ship chat`.
package shipclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxJSONBody bounds a JSON answer (status, messages, errors). A page of
// history is far below it; a body this large is not ship talking.
const maxJSONBody = 32 << 20

// DefaultStreamIdleTimeout is how long a streamed turn may stay silent
// before the server counts as gone. ship sends a keep-alive comment every
// 30 s, so a few missed ones mean a dead connection, not a slow model.
const DefaultStreamIdleTimeout = 2 * time.Minute

// Options configure a Client.
type Options struct {
	// BaseURL is where ship listens, e.g. http://127.0.0.1:3000. A URL
	// without a scheme gets http://.
	BaseURL string
	// Token is sent as "Authorization: Bearer <Token>"; "" sends none.
	Token string
	// HTTPClient makes the requests; nil means http.DefaultClient. Its
	// Timeout must be zero (or long) for streamed turns: use contexts to
	// bound the other calls.
	HTTPClient *http.Client
	// StreamIdleTimeout ends a streamed turn that receives nothing, not
	// even a keep-alive, for this long; 0 means DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration
}

// Client is a ship API client. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	token string
	hc    *http.Client
	idle  time.Duration
}

// New returns a client for the server at opts.BaseURL.
func New(opts Options) (*Client, error) {
	raw := strings.TrimSpace(opts.BaseURL)
	if raw == "" {
		return nil, errors.New("the server URL is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the server URL %q is invalid: %w", opts.BaseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("the server URL %q must start with http:// or https://", opts.BaseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("the server URL %q has no host", opts.BaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	hc := opts.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	idle := opts.StreamIdleTimeout
	if idle <= 0 {
		idle = DefaultStreamIdleTimeout
	}
	return &Client{base: u, token: opts.Token, hc: hc, idle: idle}, nil
}

// BaseURL returns the server URL the client talks to.
func (c *Client) BaseURL() string { return c.base.String() }

// Status is the part of GET /api/status a client shows.
type Status struct {
	Version       string `json:"version"`
	Model         string `json:"model"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	StartedAt     string `json:"startedAt"`
}

// Message is one ChatStore entry as GET /api/chats/{chatKey}/messages
// returns it.
type Message struct {
	V         int             `json:"v"`
	TS        int64           `json:"ts"` // ms since the Unix epoch
	Channel   string          `json:"channel"`
	ChatID    string          `json:"chatId"`
	ChatKey   string          `json:"chatKey"`
	UserID    string          `json:"userId,omitempty"`
	MessageID string          `json:"messageId,omitempty"`
	Role      string          `json:"role"` // user, assistant or system
	Text      string          `json:"text"`
	Meta      json.RawMessage `json:"meta,omitempty"`
}

// IsUsage reports whether m is the entry a run leaves with the tokens it
// used (a system entry whose meta.event is "usage"), not a message.
func (m Message) IsUsage() bool {
	if m.Role != "system" || len(m.Meta) == 0 {
		return false
	}
	var meta struct {
		Event string `json:"event"`
	}
	return json.Unmarshal(m.Meta, &meta) == nil && meta.Event == "usage"
}

// Time is when the message was logged.
func (m Message) Time() time.Time { return time.UnixMilli(m.TS) }

// Health checks GET /health, which needs no token: nil means the server
// is up.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, c.endpoint("/health", ""), nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxJSONBody))
	if resp.StatusCode != http.StatusOK {
		return &APIError{Status: resp.StatusCode, Message: "health check failed"}
	}
	return nil
}

// Status reads GET /api/status. A wrong token is an error that matches
// ErrUnauthorized, which makes this the call to check a token with.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.getJSON(ctx, c.endpoint("/api/status", ""), &st)
	return st, err
}

// Messages returns the last limit messages of chatKey, oldest first.
func (c *Client) Messages(ctx context.Context, chatKey string, limit int) ([]Message, error) {
	if chatKey == "" {
		return nil, errors.New("chatKey is empty")
	}
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	u := c.endpoint("/api/chats/"+chatKey+"/messages", q.Encode())
	// The chatKey holds ':' and may hold other reserved characters: it is
	// one path segment, escaped as such.
	u.RawPath = c.base.Path + "/api/chats/" + url.PathEscape(chatKey) + "/messages"
	var body struct {
		Messages []Message `json:"messages"`
	}
	if err := c.getJSON(ctx, u, &body); err != nil {
		return nil, err
	}
	return body.Messages, nil
}

// endpoint is the base URL with path appended.
func (c *Client) endpoint(path, query string) *url.URL {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query
	return &u
}

func (c *Client) getJSON(ctx context.Context, u *url.URL, v any) error {
	resp, err := c.do(ctx, http.MethodGet, u, nil, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readAPIError(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody)).Decode(v); err != nil {
		return fmt.Errorf("reading %s: %w", u.Path, err)
	}
	return nil
}

// do sends a request with the token and turns transport failures into
// UnreachableError.
func (c *Client) do(ctx context.Context, method string, u *url.URL, body io.Reader, h http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("building %s %s: %w", method, u.Path, err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UnreachableError{Sent: !isDialError(err), Err: err}
	}
	return resp, nil
}

// isDialError reports whether err happened while connecting, before any
// byte of the request was written.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// readAPIError reads a non-success answer into an APIError.
func readAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // the status alone is enough if the body breaks
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &APIError{Status: resp.StatusCode}
	if json.Unmarshal(raw, &body) == nil && body.Error.Message != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return e
}

// RunTask asks the server to run scheduled task name now
// (POST /api/tasks/{name}/run) and returns the run's id.
func (c *Client) RunTask(ctx context.Context, name string) (string, error) {
	u := c.endpoint("/api/tasks/"+name+"/run", "")
	u.RawPath = c.base.Path + "/api/tasks/" + url.PathEscape(name) + "/run"
	// An empty JSON object: ship takes state-changing requests only as
	// application/json, which a web page cannot send it unasked.
	resp, err := c.do(ctx, http.MethodPost, u, strings.NewReader("{}"), http.Header{
		"Accept":       {"application/json"},
		"Content-Type": {"application/json"},
	})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return "", readAPIError(resp)
	}
	var body struct {
		TaskID string `json:"taskId"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJSONBody)).Decode(&body); err != nil || body.TaskID == "" {
		return "", fmt.Errorf("reading %s: the answer has no taskId: is that a ship?", u.Path)
	}
	return body.TaskID, nil
}
