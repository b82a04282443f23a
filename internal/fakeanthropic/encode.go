package fakeanthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

const (
	maxChunkText = 256  // bytes of text per text_delta, at most
	maxFragment  = 4096 // bytes of partial_json per input_json_delta, at most
)

// outBlock is a content block of an answer.
type outBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type outUsage struct {
	InputTokens int `json:"input_tokens"`
	// CacheCreationInputTokens and CacheReadInputTokens are the prompt
	// tokens written to and read from the prompt cache (see cache.go);
	// InputTokens is the rest.
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type message struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []outBlock `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        outUsage   `json:"usage"`
}

// reply holds everything needed to answer one successful request.
type reply struct {
	id     string
	model  string
	blocks []outBlock // text first (if any), then the tool uses
	stop   string
	usage  outUsage

	pace         Pace
	streamErr    string // an error event's type: sent instead of the content
	streamErrMsg string
}

func (rp reply) message() message {
	return message{ID: rp.id, Type: "message", Role: "assistant", Model: rp.model,
		Content: rp.blocks, StopReason: &rp.stop, Usage: rp.usage}
}

// writeMessage answers a non-streamed request.
func writeMessage(w http.ResponseWriter, rp reply) {
	writeJSON(w, http.StatusOK, rp.message())
}

// writeStream answers a streamed request as server-sent events, flushing
// after every event: message_start, then for each block content_block_start,
// its deltas and content_block_stop, then message_delta (stop reason and
// output tokens) and message_stop. Write errors (a client that went away)
// end the stream. With rp.streamErr the content is an error event instead,
// and the stream ends after it.
func writeStream(ctx context.Context, w http.ResponseWriter, rp reply) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	type obj = map[string]any

	start := rp.message()
	start.Content = []outBlock{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1 // the real API reports a token or so here
	if !send("message_start", obj{"type": "message_start", "message": start}) ||
		!send("ping", obj{"type": "ping"}) {
		return
	}
	if rp.streamErr != "" {
		// The shape of the example under "Error events" in
		// https://docs.anthropic.com/en/api/messages-streaming.
		msg := rp.streamErrMsg
		if msg == "" {
			msg = "Overloaded"
		}
		send("error", obj{"type": "error", "error": obj{"type": rp.streamErr, "message": msg}})
		return
	}
	// paced waits before a piece of a paced answer; false: the client left.
	paced := func() bool {
		return rp.pace.Every <= 0 || fakehttp.Pause(ctx, rp.pace.Every)
	}
	for i, b := range rp.blocks {
		first := b
		var deltas []obj
		switch b.Type {
		case "text":
			empty := ""
			first.Text = &empty
			pieces := fakehttp.SplitWords(*b.Text, maxChunkText)
			if rp.pace.Bytes > 0 {
				pieces = fakehttp.SplitBytes(*b.Text, rp.pace.Bytes)
			}
			for _, piece := range pieces {
				deltas = append(deltas, obj{"type": "text_delta", "text": piece})
			}
		case "tool_use":
			first.Input = json.RawMessage(`{}`)
			// The real API opens every tool input with an empty fragment.
			deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": ""})
			frags := fakehttp.Fragments(string(b.Input), maxFragment)
			if rp.pace.Bytes > 0 {
				frags = fakehttp.SplitBytes(string(b.Input), rp.pace.Bytes)
			}
			for _, frag := range frags {
				deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": frag})
			}
		}
		if !send("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": first}) {
			return
		}
		for _, d := range deltas {
			// The empty fragment a tool input opens with is no piece.
			if opening := d["partial_json"] == ""; !opening && !paced() {
				return
			}
			if !send("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", obj{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": rp.stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": rp.usage.OutputTokens}}) {
		return
	}
	send("message_stop", obj{"type": "message_stop"})
}

// writeError sends the real API's error body.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	type body struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	writeJSON(w, e.status, struct {
		Type  string `json:"type"`
		Error body   `json:"error"`
	}{"error", body{e.typ, e.message}})
}

// responseError turns a scripted non-200 Response into an apiError, filling
// in the type and message the real API would use.
func responseError(resp Response) *apiError {
	e := &apiError{status: resp.Status, typ: resp.ErrorType, message: resp.ErrorMessage}
	typ, msg := "api_error", http.StatusText(resp.Status)
	switch resp.Status {
	case http.StatusBadRequest:
		typ, msg = "invalid_request_error", "Invalid request."
	case http.StatusUnauthorized:
		typ, msg = "authentication_error", "invalid x-api-key"
	case http.StatusForbidden:
		typ, msg = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound:
		typ, msg = "not_found_error", "Not found."
	case http.StatusRequestEntityTooLarge:
		typ, msg = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		typ, msg = "rate_limit_error", "This request would exceed the rate limit for your organization."
	case http.StatusInternalServerError:
		msg = "Internal server error"
	case 529:
		typ, msg = "overloaded_error", "Overloaded"
	}
	if e.typ == "" {
		e.typ = typ
	}
	if e.message == "" {
		e.message = msg
	}
	if e.message == "" {
		e.message = "Error"
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
