package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// langchaingo v0.1.14's Anthropic client calls the streaming func only for
// text deltas: a tool_use block's input arrives as input_json_delta events
// (https://docs.anthropic.com/en/api/messages-streaming, "Input JSON
// delta"), which it gathers silently and parses at content_block_stop. A
// chat_send reply would then show nothing while Claude writes it. It also
// turns an SSE error event after HTTP 200 ("Error events" on the same page:
// an overloaded_error is what would be an HTTP 529 without streaming) into
// an untyped error, and keeps reading the stream after reporting it.
//
// sseDoer, the client's HTTP doer, therefore reads the event stream as it
// passes to the client (sseTap) and reports what the client does not: the
// pieces of each tool input, to the ToolInputFunc of the call, and the
// type of an error event, which streamedCall.classify makes a typed error.
// The client still parses every byte itself; nothing is changed on the way.

// ToolInputFunc hears a piece of the JSON input of a tool call while the
// model writes it: call counts the tool calls of the answer from 0, name is
// the tool's. The pieces of one call, joined, are its input exactly as the
// model sent it.
type ToolInputFunc func(ctx context.Context, call int, name, piece string)

// toolInputKey is the CallOptions.Metadata key of a ToolInputFunc. It
// starts with "openai:" because langchaingo's OpenAI client keeps such keys
// to itself: it sends every other key to the API as request metadata, and
// a func cannot be encoded (the call failed before it was sent).
const toolInputKey = "openai:ship_tool_input_stream"

// WithToolInputStream is a call option for a streamed call (one with
// llms.WithStreamingFunc) to an Anthropic model made by New: f hears the
// tool calls' input as it is written. OpenAI-style clients report tool
// calls to the streaming func themselves and ignore it.
func WithToolInputStream(f ToolInputFunc) llms.CallOption {
	return func(o *llms.CallOptions) {
		if o.Metadata == nil {
			o.Metadata = map[string]any{}
		}
		o.Metadata[toolInputKey] = f
	}
}

// streamedCall is what the tap learns of one streamed model call. The tap
// writes it from the goroutine langchaingo reads the stream in; the model
// reads it after GenerateContent returns.
type streamedCall struct {
	onInput ToolInputFunc

	mu      sync.Mutex
	calls   int                // tool_use blocks seen
	blocks  map[int]*toolBlock // tool_use blocks by content block index
	byID    map[string]*toolBlock
	errType string // the type of an error event, if one came
	errMsg  string
}

type toolBlock struct {
	call  int
	id    string
	name  string
	input strings.Builder
}

// startStreamedCall returns ctx carrying a streamedCall when opts ask for
// a stream, and the call (nil otherwise).
func startStreamedCall(ctx context.Context, opts []llms.CallOption) (context.Context, *streamedCall) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.StreamingFunc == nil {
		return ctx, nil
	}
	c := &streamedCall{blocks: map[int]*toolBlock{}, byID: map[string]*toolBlock{}}
	c.onInput, _ = o.Metadata[toolInputKey].(ToolInputFunc)
	return withCall(ctx, func(cl *call) { cl.stream = c }), c
}

// sseEvent is the part of a Messages API stream event the tap reads.
type sseEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// observe reads one data line of the stream; it reports whether the stream
// is over (an error event ends it).
func (c *streamedCall) observe(ctx context.Context, data []byte) (over bool) {
	// Text deltas, the bulk of a stream, need no second decoding.
	if !bytes.Contains(data, []byte(`"tool_use"`)) && !bytes.Contains(data, []byte(`"input_json_delta"`)) &&
		!bytes.Contains(data, []byte(`"error"`)) {
		return false
	}
	var ev sseEvent
	if json.Unmarshal(data, &ev) != nil {
		return false // the client reports a malformed event itself
	}
	c.mu.Lock()
	var piece string
	var b *toolBlock
	switch {
	case ev.Type == "content_block_start" && ev.ContentBlock.Type == "tool_use":
		b = &toolBlock{call: c.calls, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
		c.calls++
		c.blocks[ev.Index] = b
		c.byID[b.id] = b
	case ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta":
		if b = c.blocks[ev.Index]; b != nil {
			piece = ev.Delta.PartialJSON
			b.input.WriteString(piece)
		}
	case ev.Type == "error":
		c.errType, c.errMsg = ev.Error.Type, ev.Error.Message
		over = true
	}
	c.mu.Unlock()
	if piece != "" && c.onInput != nil {
		c.onInput(ctx, b.call, b.name, piece)
	}
	return over
}

// rawInputs puts back each streamed tool call's input as the model wrote
// it: langchaingo decodes it into a map and encodes that again, which
// sorts the keys, escapes <, > and & and rounds big numbers.
func (c *streamedCall) rawInputs(resp *llms.ContentResponse) {
	if resp == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		for _, tc := range ch.ToolCalls {
			b := c.byID[tc.ID]
			if b == nil || tc.FunctionCall == nil {
				continue
			}
			if raw := strings.TrimSpace(b.input.String()); raw != "" && json.Valid([]byte(raw)) {
				tc.FunctionCall.Arguments = raw
			}
		}
	}
}

// classify gives the error of a call whose stream carried an error event
// the llms.Error code the HTTP status would have had: Anthropic's
// overloaded_error (529) and api_error (500) say the provider is
// unavailable for now, rate_limit_error (429) is a rate limit; callers
// retry those.
func (c *streamedCall) classify(err error) error {
	c.mu.Lock()
	typ, msg := c.errType, c.errMsg
	c.mu.Unlock()
	var code llms.ErrorCode
	switch typ {
	case "overloaded_error", "api_error":
		code = llms.ErrCodeProviderUnavailable
	case "rate_limit_error":
		code = llms.ErrCodeRateLimit
	default:
		return err
	}
	return llms.NewError(code, "anthropic", "stream error event "+typ+": "+msg).WithCause(err)
}

// sseDoer sends requests through c, with the cache breakpoints of the
// call's cachePlan, and taps the event stream of a call that asked for one
// (its context carries a streamedCall).
type sseDoer struct{ c *http.Client }

func (d sseDoer) Do(req *http.Request) (*http.Response, error) {
	if plan := callFrom(req.Context()).cache; plan != nil && req.Body != nil {
		body, err := withBreakpoints(req.Body, *plan)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	resp, err := d.c.Do(req)
	if err != nil {
		return resp, err
	}
	call := callFrom(req.Context()).stream
	if call == nil || resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return resp, nil
	}
	resp.Body = &sseTap{ctx: req.Context(), body: resp.Body, r: bufio.NewReader(resp.Body), call: call}
	return resp, nil
}

// sseTap passes the stream on one line at a time and observes each line as
// it goes. Handing out no more than a line keeps the reports in order with
// the client's own: langchaingo's scanner handles every whole line it holds
// before it reads again, so by the time a line is observed, the text
// deltas before it have reached the streaming func.
type sseTap struct {
	ctx  context.Context
	body io.ReadCloser
	r    *bufio.Reader
	call *streamedCall

	line []byte // the rest of the line being handed out
	err  error  // what reading the line ended with
}

func (t *sseTap) Read(p []byte) (int, error) {
	if len(t.line) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		t.line, t.err = t.r.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(t.line), []byte("data:")); ok && t.call.observe(t.ctx, bytes.TrimSpace(data)) {
			// langchaingo reports the error event but reads on; the
			// stream ends here, so its reader stops too instead of
			// racing the caller that already closed the body.
			t.err = io.EOF
		}
		if len(t.line) == 0 {
			return 0, t.err
		}
	}
	n := copy(p, t.line)
	t.line = t.line[n:]
	return n, nil
}

func (t *sseTap) Close() error { return t.body.Close() }
