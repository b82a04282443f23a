// Package fakeanthropic is a loopback fake of the Anthropic Messages API.
//
// It serves POST /v1/messages on 127.0.0.1 with the wire shapes of the real
// API: content blocks (text, tool_use, tool_result), tools with an
// input_schema, stop_reason and usage, the server-sent-event stream
// (message_start, content_block_start, content_block_delta with text_delta
// or input_json_delta, content_block_stop, message_delta, message_stop) and
// the {"type":"error","error":{...}} error body, and on demand a slowly
// written stream (Response.Pace) or an error event after HTTP 200
// (Response.StreamError, as the real API sends overloaded_error under
// load). An unmodified client such
// as langchaingo's llms/anthropic can be pointed at it with
// anthropic.WithBaseURL(server.BaseURL()). Replies are scripted by a
// Handler; EchoChatSend is the default.
//
// Like the real API it insists on the x-api-key and anthropic-version
// headers and on max_tokens, and it checks that every tool_use is answered
// by a tool_result in the next user turn, so a client that drops or
// misroutes a tool call fails here as it would in production.
//
// The package does not import "testing": it is used by tests and by
// load-test programs alike.
package fakeanthropic

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

// Block is one content block of a request message.
type Block struct {
	// Type is "text", "tool_use", "tool_result" or another type the real
	// API knows ("image", "document", ...), kept but not interpreted.
	Type string
	// Text is a text block's text, or a tool_result's content (its text
	// blocks concatenated when it was sent as an array).
	Text string
	// ID and Name identify a tool_use; Input is its input object as sent.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID is the tool_use a tool_result answers.
	ToolUseID string
	// IsError is a tool_result's is_error flag.
	IsError bool
}

// Message is one decoded message of a request. A string content is
// decoded as one text block.
type Message struct {
	// Role is "user" or "assistant".
	Role   string
	Blocks []Block
}

// Text returns the texts of the message's text blocks, concatenated.
func (m Message) Text() string {
	var b strings.Builder
	for _, bl := range m.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// ToolUses returns the message's tool_use blocks in order.
func (m Message) ToolUses() []Block { return m.blocksOf("tool_use") }

// ToolResults returns the message's tool_result blocks in order.
func (m Message) ToolResults() []Block { return m.blocksOf("tool_result") }

func (m Message) blocksOf(typ string) []Block {
	var out []Block
	for _, bl := range m.Blocks {
		if bl.Type == typ {
			out = append(out, bl)
		}
	}
	return out
}

// Tool is a client tool offered by a request.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON schema exactly as sent.
	InputSchema json.RawMessage
}

// Request is a decoded Messages API request.
type Request struct {
	Model     string
	MaxTokens int
	// System is the top-level system prompt (text blocks concatenated when
	// it was sent as an array).
	System   string
	Messages []Message
	Tools    []Tool
	Stream   bool
	// Version is the anthropic-version header.
	Version string
	// Body is the raw request body.
	Body []byte
	// CacheBreakpoints name the blocks that carried cache_control, in
	// prompt order: "tools.N", "system.N" (a system sent as blocks) and
	// "messages.N.content.M".
	CacheBreakpoints []string
	// PromptTokens is the fake's estimate of the whole prompt: input_tokens
	// plus the tokens read from and written to the cache (unless the
	// Handler sets its own); 0 for a rejected request.
	PromptTokens int
	// CacheReadTokens and CacheCreationTokens are what the fake reported
	// as read from and written to its prompt cache (see cache.go); 0 for a
	// request it rejected.
	CacheReadTokens, CacheCreationTokens int
}

// LastUser returns the text of the last user message that has text (a user
// message carrying only tool results is not the user speaking), or "".
func (r Request) LastUser() string {
	if i := r.lastUserIndex(); i >= 0 {
		return r.Messages[i].Text()
	}
	return ""
}

// HasTool reports whether the request offers a tool with the given name.
func (r Request) HasTool(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Name == name })
}

// ToolUses returns the tool_use blocks of the assistant messages after the
// last user text, in order: the calls the model made for this user turn.
func (r Request) ToolUses() []Block {
	var out []Block
	for _, m := range r.Messages[r.lastUserIndex()+1:] {
		if m.Role == "assistant" {
			out = append(out, m.ToolUses()...)
		}
	}
	return out
}

// ToolResults returns the tool_result blocks after the last user text, in
// order.
func (r Request) ToolResults() []Block {
	var out []Block
	for _, m := range r.Messages[r.lastUserIndex()+1:] {
		if m.Role == "user" {
			out = append(out, m.ToolResults()...)
		}
	}
	return out
}

func (r Request) lastUserIndex() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" && slices.ContainsFunc(m.Blocks, func(b Block) bool { return b.Type == "text" }) {
			return i
		}
	}
	return -1
}

// clone returns a deep copy of r, so that recorded requests cannot be
// changed through a copy handed to a Handler or returned by Requests.
func (r Request) clone() Request {
	c := r
	c.Body = slices.Clone(r.Body)
	c.CacheBreakpoints = slices.Clone(r.CacheBreakpoints)
	c.Tools = slices.Clone(r.Tools)
	for i := range c.Tools {
		c.Tools[i].InputSchema = slices.Clone(c.Tools[i].InputSchema)
	}
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		c.Messages[i].Blocks = slices.Clone(c.Messages[i].Blocks)
		for j := range c.Messages[i].Blocks {
			c.Messages[i].Blocks[j].Input = slices.Clone(c.Messages[i].Blocks[j].Input)
		}
	}
	return c
}

// ToolUse is a tool call the scripted model makes.
type ToolUse struct {
	// ID is the tool_use id ("toolu_..."); empty means one unique within
	// the server.
	ID   string
	Name string
	// Input is a JSON object as text; empty means {}.
	Input string
}

// Response is what a Handler wants the fake model to answer. The content
// is a text block (when Text is not empty) followed by one tool_use block
// per ToolUses entry, which is how Claude writes "let me do that" before
// calling tools. A Response with neither has empty content, as the real
// API answers when the model has nothing to add after a tool result.
type Response struct {
	Text     string
	ToolUses []ToolUse
	// StopReason overrides the stop reason; empty means "tool_use" when
	// there are tool uses and "end_turn" otherwise ("max_tokens" mimics an
	// answer cut at max_tokens).
	StopReason string
	// Status is the HTTP status; 0 means 200. Any other value sends the
	// error body {"type":"error","error":{"type":ErrorType,"message":...}}.
	Status int
	// ErrorType is the error type; empty picks the real API's for the
	// status (rate_limit_error for 429, overloaded_error for 529, ...).
	ErrorType string
	// ErrorMessage is the error text; empty picks one like the real API's.
	ErrorMessage string
	// InputTokens and OutputTokens are reported in usage; zero means a
	// rough count (about four bytes per token).
	InputTokens, OutputTokens int
	// StreamError, when set on a streamed answer, is the type of an error
	// event (overloaded_error, say) sent after HTTP 200, message_start and
	// ping instead of the content; the stream ends there. The real API
	// does this under load: "Error events" in
	// https://docs.anthropic.com/en/api/messages-streaming, where an
	// overloaded_error stands for what would be an HTTP 529 without
	// streaming. StreamErrorMessage is its text ("Overloaded" when empty).
	StreamError        string
	StreamErrorMessage string
	// Pace, when set, makes a streamed answer come slowly, as from a real
	// model: text and each tool input in pieces of Pace.Bytes (at least
	// 1), with Pace.Every before each piece.
	Pace Pace
}

// Pace is how fast a streamed answer is written (see Response.Pace).
type Pace struct {
	Bytes int
	Every time.Duration
}

// Handler scripts the fake model: it is called once for every valid
// request, possibly from several goroutines at once.
type Handler func(Request) Response

// EchoChatSend is the default scripted model. If the request offers a
// "chat_send" tool and there is no tool result after the last user text, it
// calls chat_send with {"text":"echo: <last user text>"}; once a tool result
// is present it answers with empty content and stop_reason end_turn.
// Without that tool it answers with the text "echo: <last user text>".
func EchoChatSend(r Request) Response {
	text := "echo: " + r.LastUser()
	if !r.HasTool("chat_send") {
		return Response{Text: text}
	}
	if len(r.ToolResults()) > 0 {
		return Response{}
	}
	input, _ := json.Marshal(map[string]string{"text": text}) // cannot fail for a string map
	return Response{ToolUses: []ToolUse{{Name: "chat_send", Input: string(input)}}}
}

// inputTokens estimates the prompt size of a request.
func inputTokens(r Request) int {
	n := fakehttp.RoughTokens(r.System)
	for _, m := range r.Messages {
		n += 3
		for _, b := range m.Blocks {
			n += fakehttp.RoughTokens(b.Text) + fakehttp.RoughTokens(b.Name) + fakehttp.RoughTokens(string(b.Input))
		}
	}
	for _, t := range r.Tools {
		n += fakehttp.RoughTokens(t.Name) + fakehttp.RoughTokens(t.Description) + fakehttp.RoughTokens(string(t.InputSchema))
	}
	return max(n, 1)
}

// outputTokens estimates the size of a reply.
func outputTokens(resp Response) int {
	n := fakehttp.RoughTokens(resp.Text)
	for _, tu := range resp.ToolUses {
		n += fakehttp.RoughTokens(tu.Name) + fakehttp.RoughTokens(tu.Input)
	}
	return max(n, 1)
}
