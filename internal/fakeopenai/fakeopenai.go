// Package fakeopenai is a loopback fake of the OpenAI chat-completions API.
//
// It serves POST /v1/chat/completions on 127.0.0.1 with the wire shapes of the
// real API (non-streamed JSON, server-sent-event streams, tool calls, usage and
// the {"error":{...}} error body), so that an unmodified client such as
// langchaingo's llms/openai can be pointed at it with openai.WithBaseURL.
// Replies are scripted by a Handler; EchoChatSend is the default. Image
// content parts are recorded (Message.Images). It also serves POST
// /v1/audio/transcriptions (multipart, as the real endpoint), scripted by a
// Transcriber and recorded for Transcriptions.
//
// The package does not import "testing": it is used by tests and by load-test
// programs alike.
package fakeopenai

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

// ToolCall is one function call, either requested by the model in a Response
// or carried by an assistant message of a Request.
type ToolCall struct {
	// ID is the call id ("call_<n>"). In a Response it may be left empty and
	// the server fills in an id unique within the server.
	ID string
	// Name is the function name.
	Name string
	// Arguments is a JSON object encoded as a string. An empty value is sent
	// as "{}".
	Arguments string
}

// Message is one decoded message of a chat-completions request.
type Message struct {
	// Role is system, user, assistant or tool (developer and function are
	// accepted as well).
	Role string
	// Content is the message text, whether it was sent as a string or as an
	// array of content parts; the texts of "text" parts are concatenated.
	Content string
	// Images are the message's "image_url" parts, in order.
	Images []Image
	// ToolCalls are the calls carried by an assistant message.
	ToolCalls []ToolCall
	// ToolCallID is the id of the call a tool message answers.
	ToolCallID string
}

// Image is one "image_url" content part: an https URL or a data URL
// ("data:image/jpeg;base64,…").
type Image struct {
	URL    string
	Detail string
}

// LastUserImages returns the image parts of the last user message.
func (r Request) LastUserImages() []Image {
	if i := r.lastUserIndex(); i >= 0 {
		return r.Messages[i].Images
	}
	return nil
}

// Tool is a function tool offered by a request.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema exactly as sent (may be "null").
	Parameters json.RawMessage
}

// Request is a decoded chat-completions request.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	Stream   bool
	// Temperature and TopP are the sampling settings sent (nil: none).
	Temperature, TopP *float64
	// MaxTokens is max_completion_tokens, or the older max_tokens.
	MaxTokens int
	// Body is the raw request body.
	Body []byte
	// PromptTokens is the fake's estimate of the prompt (what usage
	// reports unless the Handler sets its own); 0 for a rejected request.
	PromptTokens int
	// CachedTokens is what the fake reported as read from its prompt
	// cache (usage.prompt_tokens_details.cached_tokens; see cache.go); 0
	// for a request it rejected.
	CachedTokens int

	// includeUsage reports stream_options.include_usage.
	includeUsage bool
}

// LastUser returns the content of the last user message, or "" if there is none.
func (r Request) LastUser() string {
	if i := r.lastUserIndex(); i >= 0 {
		return r.Messages[i].Content
	}
	return ""
}

// HasTool reports whether the request offers a tool with the given name.
func (r Request) HasTool(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Name == name })
}

// ToolResults returns the tool messages that follow the last user message
// (all tool messages if there is no user message).
func (r Request) ToolResults() []Message {
	var out []Message
	for _, m := range r.Messages[r.lastUserIndex()+1:] {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

func (r Request) lastUserIndex() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return i
		}
	}
	return -1
}

// clone returns a deep copy of r, so that recorded requests cannot be changed
// through a copy handed to a Handler or returned by Requests.
func (r Request) clone() Request {
	c := r
	c.Body = slices.Clone(r.Body)
	c.Tools = slices.Clone(r.Tools)
	for i := range c.Tools {
		c.Tools[i].Parameters = slices.Clone(c.Tools[i].Parameters)
	}
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		c.Messages[i].ToolCalls = slices.Clone(c.Messages[i].ToolCalls)
		c.Messages[i].Images = slices.Clone(c.Messages[i].Images)
	}
	return c
}

// Response is what a Handler wants the fake model to answer.
type Response struct {
	// Content is the assistant text. When it is empty and ToolCalls are
	// present, the non-streamed message carries "content": null.
	Content string
	// ToolCalls are the calls the model makes; IDs may be left empty.
	ToolCalls []ToolCall
	// Status is the HTTP status; 0 means 200. Any other value sends the
	// error body {"error":{"message":ErrorMessage,"type":...,"code":ErrorCode}}.
	Status int
	// ErrorMessage is the error text; empty picks a message like the real
	// API's for the status (and for ErrorCode "context_length_exceeded").
	ErrorMessage string
	// ErrorCode is the error code, e.g. "context_length_exceeded" or
	// "rate_limit_exceeded" (the default for 429).
	ErrorCode string
	// PromptTokens and CompletionTokens are reported in usage; zero means a
	// rough count (about four bytes per token).
	PromptTokens, CompletionTokens int
	// Pace, when set, makes a streamed answer come slowly, as from a real
	// model: content and each tool call's arguments in pieces of
	// Pace.Bytes (at least 1), with Pace.Every before each piece.
	Pace Pace
}

// Pace is how fast a streamed answer is written (see Response.Pace).
type Pace struct {
	Bytes int
	Every time.Duration
	// Stall, when set, holds the answer that long after its first
	// StallAfter pieces (content and argument pieces, as Bytes cuts
	// them), as a server that hangs mid-answer.
	Stall      time.Duration
	StallAfter int
}

// Handler scripts the fake model: it is called once for every valid request,
// possibly from several goroutines at once.
type Handler func(Request) Response

// EchoChatSend is the default scripted model. If the request offers a
// "chat_send" tool and there is no tool result after the last user message,
// it calls chat_send with {"text":"echo: <last user text>"}; once a tool
// result is present it answers with empty content and no tool calls. Without
// that tool it answers with the content "echo: <last user text>".
func EchoChatSend(r Request) Response {
	text := "echo: " + r.LastUser()
	if !r.HasTool("chat_send") {
		return Response{Content: text}
	}
	if len(r.ToolResults()) > 0 {
		return Response{}
	}
	args, _ := json.Marshal(map[string]string{"text": text}) // cannot fail for a string map
	return Response{ToolCalls: []ToolCall{{Name: "chat_send", Arguments: string(args)}}}
}

// promptTokens estimates the prompt size of a request.
func promptTokens(r Request) int {
	n := 3 // reply priming, as the real API counts it
	for _, m := range r.Messages {
		n += 4 + fakehttp.RoughTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += fakehttp.RoughTokens(tc.Name) + fakehttp.RoughTokens(tc.Arguments)
		}
	}
	for _, t := range r.Tools {
		n += fakehttp.RoughTokens(t.Name) + fakehttp.RoughTokens(t.Description) + fakehttp.RoughTokens(string(t.Parameters))
	}
	return n
}

// completionTokens estimates the size of a reply.
func completionTokens(resp Response) int {
	n := fakehttp.RoughTokens(resp.Content)
	for _, tc := range resp.ToolCalls {
		n += fakehttp.RoughTokens(tc.Name) + fakehttp.RoughTokens(tc.Arguments)
	}
	return max(n, 1)
}
