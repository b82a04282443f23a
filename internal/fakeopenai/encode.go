package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

const (
	fingerprint  = "fp_fakeopenai"
	maxChunkText = 256  // bytes of content per streamed chunk, at most
	maxFragment  = 4096 // bytes of arguments per streamed fragment, at most
)

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type outToolCall struct {
	Index    *int         `json:"index,omitempty"` // streamed deltas only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type outUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		// CachedTokens is the part of PromptTokens read from the prompt
		// cache (see cache.go).
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type outMessage struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	Refusal   *string       `json:"refusal"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type outChoice struct {
	Index        int        `json:"index"`
	Message      outMessage `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type completion struct {
	ID                string      `json:"id"`
	Object            string      `json:"object"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	Choices           []outChoice `json:"choices"`
	Usage             outUsage    `json:"usage"`
	SystemFingerprint string      `json:"system_fingerprint"`
}

type outDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []outToolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        outDelta  `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *outUsage     `json:"usage,omitempty"`
}

// reply holds everything needed to answer one successful request.
type reply struct {
	id      string
	created int64
	model   string
	resp    Response // tool-call ids and arguments already filled in
	usage   outUsage
	// includeUsage adds the final usage chunk to a stream.
	includeUsage bool
	// firstPiece hears when a stream's first piece of text or arguments
	// went out.
	firstPiece func(time.Time)
}

func (rp reply) finishReason() string {
	if len(rp.resp.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// writeCompletion answers a non-streamed request.
func writeCompletion(w http.ResponseWriter, rp reply) {
	msg := outMessage{Role: "assistant"}
	if rp.resp.Content != "" || len(rp.resp.ToolCalls) == 0 {
		msg.Content = &rp.resp.Content
	}
	for _, tc := range rp.resp.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, outToolCall{ID: tc.ID, Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	writeJSON(w, http.StatusOK, completion{
		ID: rp.id, Object: "chat.completion", Created: rp.created, Model: rp.model,
		Choices:           []outChoice{{Message: msg, FinishReason: rp.finishReason()}},
		Usage:             rp.usage,
		SystemFingerprint: fingerprint,
	})
}

// writeStream answers a streamed request as server-sent events, flushing
// after every chunk. Write errors (a client that went away) end the stream.
func writeStream(ctx context.Context, w http.ResponseWriter, rp reply) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	base := chunk{ID: rp.id, Object: "chat.completion.chunk", Created: rp.created, Model: rp.model,
		SystemFingerprint: fingerprint}
	send := func(c chunk) bool {
		b, err := json.Marshal(c)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	pace := rp.resp.Pace
	first := true
	sent := 0 // pieces of text or arguments sent
	delta := func(d outDelta, finish *string) bool {
		if pace.Every > 0 && finish == nil && !fakehttp.Pause(ctx, pace.Every) {
			return false
		}
		piece := d.Content != nil && *d.Content != "" || len(d.ToolCalls) > 0 && d.ToolCalls[0].Function.Arguments != ""
		if piece {
			if pace.Stall > 0 && sent == pace.StallAfter && !fakehttp.Pause(ctx, pace.Stall) {
				return false
			}
			sent++
		}
		if first && finish == nil && piece {
			// Timed as it is written: from here on the client may act on it.
			first = false
			if rp.firstPiece != nil {
				rp.firstPiece(time.Now())
			}
		}
		c := base
		c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		return send(c)
	}

	empty := ""
	if !delta(outDelta{Role: "assistant", Content: &empty}, nil) {
		return
	}
	var pieces []string
	if pace.Bytes > 0 {
		pieces = fakehttp.SplitBytes(rp.resp.Content, pace.Bytes)
	} else {
		pieces = fakehttp.SplitWords(rp.resp.Content, maxChunkText)
	}
	for _, p := range pieces {
		if !delta(outDelta{Content: &p}, nil) {
			return
		}
	}
	for i, tc := range rp.resp.ToolCalls {
		first := outToolCall{Index: &i, ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name}}
		if !delta(outDelta{ToolCalls: []outToolCall{first}}, nil) {
			return
		}
		var frags []string
		if pace.Bytes > 0 {
			frags = fakehttp.SplitBytes(tc.Arguments, pace.Bytes)
		} else {
			frags = fakehttp.Fragments(tc.Arguments, maxFragment)
		}
		for _, frag := range frags {
			part := outToolCall{Index: &i, Function: wireFunction{Arguments: frag}}
			if !delta(outDelta{ToolCalls: []outToolCall{part}}, nil) {
				return
			}
		}
	}
	finish := rp.finishReason()
	if !delta(outDelta{}, &finish) {
		return
	}
	if rp.includeUsage {
		c := base
		c.Choices = []chunkChoice{}
		c.Usage = &rp.usage
		if !send(c) {
			return
		}
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
}

// writeError sends the real API's error body.
func writeError(w http.ResponseWriter, e *apiError) {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.message, Type: e.typ}
	if e.param != "" {
		b.Param = &e.param
	}
	if e.code != "" {
		b.Code = &e.code
	}
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, struct {
		Error body `json:"error"`
	}{b})
}

// responseError turns a scripted non-200 Response into an apiError, filling
// in the message, type and code the real API would use.
func responseError(resp Response, promptTokens int) *apiError {
	e := &apiError{status: resp.Status, message: resp.ErrorMessage, code: resp.ErrorCode,
		typ: "invalid_request_error"}
	switch {
	case resp.Status == http.StatusTooManyRequests:
		e.typ = "requests"
		if e.code == "" {
			e.code = "rate_limit_exceeded"
		}
		if e.message == "" {
			e.message = "Rate limit reached for requests. Please try again in 1s."
		}
	case resp.Status >= 500:
		e.typ = "server_error"
		if e.message == "" {
			e.message = "The server had an error while processing your request. Sorry about that!"
		}
	case resp.Status == http.StatusUnauthorized:
		if e.message == "" {
			e.message = "Incorrect API key provided."
		}
	}
	if e.message == "" && e.code == "context_length_exceeded" {
		e.message = fmt.Sprintf("This model's maximum context length is 128000 tokens. However, your messages "+
			"resulted in %d tokens. Please reduce the length of the messages.", promptTokens)
	}
	if e.message == "" {
		e.message = http.StatusText(resp.Status)
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
	_, _ = w.Write(append(b, '\n'))
}
