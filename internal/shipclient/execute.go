package shipclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event types of a run, as the server streams them.
const (
	TypeUserMessageRouted = "user_message_routed"
	TypeTaskStarted       = "task_started"
	TypeContent           = "content"
	TypeAbilityRequest    = "ability_request"
	TypeAbilityResponse   = "ability_response"
	TypeTaskCompleted     = "task_completed"
	TypeError             = "error"
	// TypeArtifact is a file the run sent into the chat (Name, Kind,
	// MIMEType, Size, URL); TypeUI a question with choices it asked there
	// (QuestionID, Question, Choices), answered by typing a choice's
	// number as the next message.
	TypeArtifact = "artifact"
	TypeUI       = "ui"
)

// Event is one event of a run. Which fields are set depends on Type.
type Event struct {
	// ID is the SSE frame id ("" when the frame had none).
	ID        string `json:"-"`
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp"` // ms since the Unix epoch
	TaskID    string `json:"taskId,omitempty"`
	ChatKey   string `json:"chatKey,omitempty"`
	Channel   string `json:"channel,omitempty"`

	UserMessageID    string `json:"userMessageId,omitempty"`    // user_message_routed, error
	TriggerMessageID string `json:"triggerMessageId,omitempty"` // task_started
	TaskName         string `json:"taskName,omitempty"`         // task_started

	// content: the chunks of one message, index 0, 1, …; index -1 with
	// empty content ends the message.
	MessageID string `json:"messageId,omitempty"`
	Index     int    `json:"index"`
	Content   string `json:"content"`

	CallID    string         `json:"callId,omitempty"`    // ability_*
	AbilityID string         `json:"abilityId,omitempty"` // ability_*: the tool's name
	Input     string         `json:"input,omitempty"`     // ability_request: raw JSON arguments
	Result    *AbilityResult `json:"result,omitempty"`    // ability_response

	DurationMs int64  `json:"durationMs,omitempty"` // task_completed
	Usage      *Usage `json:"usage,omitempty"`      // task_completed, when the provider reported it

	ErrorCode    string `json:"errorCode,omitempty"`    // error
	ErrorMessage string `json:"errorMessage,omitempty"` // error

	// Kind is the artifact's media kind (image, video, audio, voice,
	// file), or the ui's kind ("choice").
	Kind     string `json:"kind,omitempty"`
	Name     string `json:"name,omitempty"`     // artifact: the file's name
	MIMEType string `json:"mimeType,omitempty"` // artifact
	Size     int64  `json:"size,omitempty"`     // artifact: bytes
	// URL is the artifact's download path on the server
	// ("/api/files/…"); DownloadURL is it made absolute with the client's
	// base URL, for showing.
	URL         string `json:"url,omitempty"`
	DownloadURL string `json:"-"`

	QuestionID string   `json:"questionId,omitempty"` // ui
	Question   string   `json:"question,omitempty"`   // ui: Markdown
	Choices    []string `json:"choices,omitempty"`    // ui
	Anyone     bool     `json:"anyone,omitempty"`     // ui: anyone in the chat may answer
	ExpiresAt  int64    `json:"expiresAt,omitempty"`  // ui: ms since the Unix epoch
}

// AbilityResult is a tool call's outcome: Type is success (Result),
// error (Error) or invalid-ability, invalid-input, unknown-failure
// (Message).
type AbilityResult struct {
	Type    string `json:"type"`
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
}

// OK reports whether the call succeeded.
func (r *AbilityResult) OK() bool { return r != nil && r.Type == "success" }

// Detail is the result on success and the reason otherwise.
func (r *AbilityResult) Detail() string {
	switch {
	case r == nil:
		return ""
	case r.Type == "success":
		return r.Result
	case r.Error != "":
		return r.Error
	default:
		return r.Message
	}
}

// Usage is the tokens a run used, as the model provider reported them.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int { return u.PromptTokens + u.CompletionTokens }

// Summary is what a turn came to.
type Summary struct {
	TaskID string
	// Completed is true when the run ended with task_completed.
	Completed bool
	// DurationMs is the run's duration as the server measured it.
	DurationMs int64
	// Usage is nil when the provider did not report tokens.
	Usage *Usage
	// ToolCalls counts ability_request events.
	ToolCalls int
}

// Execute runs one turn: it posts text to chatID and streams the run's
// events to onEvent (called on the calling goroutine, in order) until the
// run's final event. A run that ends with an error event returns the
// summary with a *RunError. A refused request is an *APIError (matching
// ErrUnauthorized for 401); a server that cannot be reached or goes away is
// an *UnreachableError.
func (c *Client) Execute(ctx context.Context, chatID, text string, onEvent func(Event)) (Summary, error) {
	// A message id of our own makes the request idempotent: ship refuses
	// a second copy of a message it is answering, so net/http may resend
	// it when a kept-alive connection turns out to be dead (it does so for
	// requests with an Idempotency-Key), instead of the turn being lost.
	msgID := "chat-" + randomHex(12)
	body, err := json.Marshal(map[string]string{"instructions": text, "chatId": chatID, "messageId": msgID})
	if err != nil {
		return Summary{}, fmt.Errorf("encoding the request: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, err := c.do(ctx, http.MethodPost, c.endpoint("/api/execute", ""), bytes.NewReader(body), http.Header{
		"Accept":          {"text/event-stream"},
		"Content-Type":    {"application/json"},
		"Idempotency-Key": {msgID},
	})
	if err != nil {
		return Summary{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Summary{}, readAPIError(resp)
	}
	if onEvent == nil {
		onEvent = func(Event) {}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		return c.blockingResult(resp.Body, onEvent)
	}
	if mt != "text/event-stream" {
		return Summary{}, fmt.Errorf("POST /api/execute answered %q, not an event stream", mt)
	}
	return c.readStream(ctx, cancel, resp.Body, onEvent)
}

// FileURL makes an artifact's download path absolute with the client's
// base URL (which may carry a path prefix of a reverse proxy); a URL that
// is already absolute is returned as it is.
func (c *Client) FileURL(u string) string {
	if u == "" || strings.Contains(u, "://") {
		return u
	}
	return strings.TrimSuffix(c.base.String(), "/") + "/" + strings.TrimPrefix(u, "/")
}

// errStreamIdle ends a stream that went silent.
var errStreamIdle = errors.New("the event stream went silent")

// watchedSSE reads frames from body; anything received, keep-alive
// comments included, shows the connection is alive, and silence for c.idle
// cancels the stream's context with errStreamIdle. stop ends the watch.
func (c *Client) watchedSSE(body io.Reader, cancel context.CancelCauseFunc) (sse *sseReader, stop func() bool) {
	idle := time.AfterFunc(c.idle, func() { cancel(errStreamIdle) })
	return newSSEReader(readFunc(func(p []byte) (int, error) {
		n, err := body.Read(p)
		idle.Reset(c.idle)
		return n, err
	})), idle.Stop
}

// readStream reads events until the run's final one.
func (c *Client) readStream(ctx context.Context, cancel context.CancelCauseFunc, body io.Reader, onEvent func(Event)) (Summary, error) {
	sse, stop := c.watchedSSE(body, cancel)
	defer stop()

	var sum Summary
	for {
		f, err := sse.Next()
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
				err = cause
			} else if ctx.Err() != nil {
				return sum, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the event stream ended before the run did")
			}
			return sum, &UnreachableError{Sent: true, Err: err}
		}
		if f.Event != "" && f.Event != "message" {
			continue // not a run event; nothing else is defined yet
		}
		var ev Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			return sum, fmt.Errorf("event %s is not valid JSON: %w", f.ID, err)
		}
		ev.ID = f.ID
		if ev.Type == TypeArtifact {
			ev.DownloadURL = c.FileURL(ev.URL)
		}
		if sum.TaskID == "" {
			sum.TaskID = ev.TaskID
		}
		if ev.Type == TypeAbilityRequest {
			sum.ToolCalls++
		}
		onEvent(ev)
		switch ev.Type {
		case TypeTaskCompleted:
			sum.Completed, sum.DurationMs, sum.Usage = true, ev.DurationMs, ev.Usage
			return sum, nil
		case TypeError:
			return sum, &RunError{Code: ev.ErrorCode, Message: ev.ErrorMessage}
		}
	}
}

// randomHex returns n random bytes in hex. crypto/rand does not fail on
// the platforms Go supports (it aborts instead), so there is no error.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// readFunc adapts a function to io.Reader.
type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// blockingResult handles a server that answers /api/execute with its JSON
// result instead of a stream (one that predates streaming): the same events
// are made up from the result, so the caller shows the turn the same way.
func (c *Client) blockingResult(body io.Reader, onEvent func(Event)) (Summary, error) {
	var res struct {
		Success   bool   `json:"success"`
		Output    string `json:"output"`
		ToolCalls []struct {
			Tool   string          `json:"tool"`
			Input  json.RawMessage `json:"input"`
			Output string          `json:"output"`
		} `json:"toolCalls"`
		Replies   []string `json:"replies"`
		Artifacts []struct {
			Name  string `json:"name"`
			Kind  string `json:"kind"`
			MIME  string `json:"mime"`
			Bytes int64  `json:"bytes"`
			URL   string `json:"url"`
		} `json:"artifacts"`
	}
	if err := json.NewDecoder(io.LimitReader(body, maxJSONBody)).Decode(&res); err != nil {
		return Summary{}, fmt.Errorf("reading the result of POST /api/execute: %w", err)
	}
	// Replies first: they are what the user sees; the tool lines follow.
	for i, r := range res.Replies {
		id := "reply-" + strconv.Itoa(i)
		onEvent(Event{Type: TypeContent, MessageID: id, Index: 0, Content: r})
		onEvent(Event{Type: TypeContent, MessageID: id, Index: -1})
	}
	for _, a := range res.Artifacts {
		onEvent(Event{Type: TypeArtifact, Name: a.Name, Kind: a.Kind, MIMEType: a.MIME, Size: a.Bytes,
			URL: a.URL, DownloadURL: c.FileURL(a.URL)})
	}
	sum := Summary{Completed: res.Success, ToolCalls: len(res.ToolCalls)}
	for i, tc := range res.ToolCalls {
		id := "call-" + strconv.Itoa(i)
		onEvent(Event{Type: TypeAbilityRequest, CallID: id, AbilityID: tc.Tool, Input: string(tc.Input)})
		onEvent(Event{Type: TypeAbilityResponse, CallID: id, AbilityID: tc.Tool,
			Result: &AbilityResult{Type: "success", Result: tc.Output}})
	}
	if !res.Success {
		return sum, &RunError{Code: "RUN_FAILED", Message: res.Output}
	}
	onEvent(Event{Type: TypeTaskCompleted})
	return sum, nil
}
