package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// apiError is an error answered with the real API's error body.
type apiError struct {
	status  int
	typ     string
	message string
}

func (e *apiError) Error() string { return e.message }

// invalid returns a 400 invalid_request_error.
func invalid(format string, args ...any) *apiError {
	return &apiError{status: 400, typ: "invalid_request_error", message: fmt.Sprintf(format, args...)}
}

// wireRequest is the subset of the request body the fake looks at.
type wireRequest struct {
	Model     *string         `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []wireMessage   `json:"messages"`
	Tools     []wireTool      `json:"tools"`
	Stream    bool            `json:"stream"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type wireTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

var toolNameRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// decodeRequest parses a request body. The first error reports malformed
// JSON (the request is then not recorded); the second reports a decoded
// request that the real API would reject.
func decodeRequest(body []byte, maxOutput int) (Request, *apiError, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, invalid("There was an error parsing the body: %v", err), nil
	}
	r := Request{Stream: w.Stream, Body: body}
	if w.Model != nil {
		r.Model = *w.Model
	}
	if w.MaxTokens != nil {
		r.MaxTokens = *w.MaxTokens
	}
	system, sysErr := decodeText(w.System)
	r.System = system
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	var bad *apiError
	if sysErr != nil {
		bad = invalid("system: Input should be a valid string or a list of text blocks")
	}
	for i, wm := range w.Messages {
		blocks, err := decodeBlocks(wm.Content, fmt.Sprintf("messages.%d", i))
		if err != nil && bad == nil {
			bad = err
		}
		r.Messages = append(r.Messages, Message{Role: wm.Role, Blocks: blocks})
	}
	if bad == nil {
		bad = validate(w, r, maxOutput)
	}
	return r, nil, bad
}

// decodeText reads a string or an array of text blocks (system prompts and
// tool_result contents take both forms).
func decodeText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" && bl.Text != nil {
			b.WriteString(*bl.Text)
		}
	}
	return b.String(), nil
}

// decodeBlocks reads a message content: a string (one text block) or an
// array of content blocks. at names the message in error messages.
func decodeBlocks(raw json.RawMessage, at string) ([]Block, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("%s.content: Field required", at)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid("%s.content: Input should be a valid string", at)
		}
		if s == "" {
			return nil, nil // reported as an empty message by validate
		}
		return []Block{{Type: "text", Text: s}}, nil
	}
	var wbs []wireBlock
	if err := json.Unmarshal(raw, &wbs); err != nil {
		return nil, invalid("%s.content: Input should be a valid list", at)
	}
	var out []Block
	for j, wb := range wbs {
		where := fmt.Sprintf("%s.content.%d", at, j)
		b := Block{Type: wb.Type, ID: wb.ID, Name: wb.Name, ToolUseID: wb.ToolUseID, IsError: wb.IsError}
		switch wb.Type {
		case "text":
			if wb.Text == nil {
				return out, invalid("%s.text: Field required", where)
			}
			if *wb.Text == "" {
				return out, invalid("%s.text: text content blocks must be non-empty", where)
			}
			b.Text = *wb.Text
		case "tool_use":
			in := bytes.TrimSpace(wb.Input)
			if len(in) == 0 || in[0] != '{' {
				return out, invalid("%s.tool_use.input: Input should be a valid dictionary", where)
			}
			if wb.ID == "" || wb.Name == "" {
				return out, invalid("%s.tool_use: id and name are required", where)
			}
			b.Input = in
		case "tool_result":
			if wb.ToolUseID == "" {
				return out, invalid("%s.tool_result.tool_use_id: Field required", where)
			}
			text, err := decodeText(wb.Content)
			if err != nil {
				return out, invalid("%s.tool_result.content: Input should be a valid string or a list of blocks", where)
			}
			b.Text = text
		case "":
			return out, invalid("%s.type: Field required", where)
		}
		out = append(out, b)
	}
	return out, nil
}

// validate applies the checks of the real API that a client bug could
// trip: missing model or max_tokens, bad roles, empty messages, bad tool
// definitions, and tool_use blocks that are not answered in the next turn.
func validate(w wireRequest, r Request, maxOutput int) *apiError {
	switch {
	case w.Model == nil:
		return invalid("model: Field required")
	case w.MaxTokens == nil:
		return invalid("max_tokens: Field required")
	case r.MaxTokens < 1:
		return invalid("max_tokens: Input should be greater than or equal to 1")
	case r.MaxTokens > maxOutput:
		return invalid("max_tokens: %d > %d, which is the maximum allowed number of output tokens for %s",
			r.MaxTokens, maxOutput, r.Model)
	case len(r.Messages) == 0:
		return invalid("messages: at least one message is required")
	}
	seen := map[string]bool{}
	for i, t := range w.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool (web_search_...) has no input_schema
		}
		if !toolNameRule.MatchString(t.Name) {
			return invalid("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if len(bytes.TrimSpace(t.InputSchema)) == 0 {
			return invalid("tools.%d.input_schema: Field required", i)
		}
		if seen[t.Name] {
			return invalid("tools: Tool names must be unique.")
		}
		seen[t.Name] = true
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(m.Blocks) == 0 && (i < len(r.Messages)-1 || m.Role != "assistant") {
			return invalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
	}
	return validateToolPairs(r.Messages)
}

// turn is a run of consecutive messages of one role, which the real API
// combines into a single turn; first is the index of its first message.
type turn struct {
	role   string
	first  int
	blocks []Block
}

func turnsOf(msgs []Message) []turn {
	var out []turn
	for i, m := range msgs {
		if n := len(out); n > 0 && out[n-1].role == m.Role {
			out[n-1].blocks = append(out[n-1].blocks, m.Blocks...)
			continue
		}
		out = append(out, turn{role: m.Role, first: i, blocks: slices.Clone(m.Blocks)})
	}
	return out
}

// validateToolPairs checks, on the combined turns, that every tool_use id
// is unique and answered by a tool_result at the start of the very next
// (user) turn (results after a text block do not count, as in the real API)
// and that every tool_result answers a tool_use of the turn before.
func validateToolPairs(msgs []Message) *apiError {
	turns := turnsOf(msgs)
	ids := map[string]bool{}
	for k, t := range turns {
		var uses []string
		for _, b := range t.blocks {
			if b.Type == "tool_result" && t.role != "user" {
				return invalid("messages.%d: `tool_result` blocks can only be in `user` messages", t.first)
			}
			if b.Type != "tool_use" {
				continue
			}
			if t.role != "assistant" {
				return invalid("messages.%d: `tool_use` blocks can only be in `assistant` messages", t.first)
			}
			if ids[b.ID] {
				return invalid("messages.%d: `tool_use` ids must be unique", t.first)
			}
			ids[b.ID] = true
			uses = append(uses, b.ID)
		}
		var answered []string // the tool results leading the next turn
		if k+1 < len(turns) && turns[k+1].role == "user" {
			for _, b := range turns[k+1].blocks {
				if b.Type != "tool_result" {
					break
				}
				answered = append(answered, b.ToolUseID)
			}
		}
		var missing []string
		for _, id := range uses {
			if !slices.Contains(answered, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
				t.first, strings.Join(missing, ", "))
		}
		if t.role != "user" {
			continue
		}
		var prev []string
		if k > 0 {
			for _, b := range turns[k-1].blocks {
				if b.Type == "tool_use" {
					prev = append(prev, b.ID)
				}
			}
		}
		for _, b := range t.blocks {
			if b.Type == "tool_result" && !slices.Contains(prev, b.ToolUseID) {
				return invalid("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
					"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
					t.first, b.ToolUseID)
			}
		}
	}
	return nil
}
