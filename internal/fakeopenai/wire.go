package fakeopenai

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
	message string
	typ     string
	param   string
	code    string
}

func (e *apiError) Error() string { return e.message }

// invalid returns a 400 invalid_request_error.
func invalid(param, code, format string, args ...any) *apiError {
	return &apiError{status: 400, message: fmt.Sprintf(format, args...),
		typ: "invalid_request_error", param: param, code: code}
}

// wireRequest is the subset of the request body the fake looks at.
type wireRequest struct {
	Model         string        `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature         *float64 `json:"temperature"`
	TopP                *float64 `json:"top_p"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// wirePart is one element of an array-valued message content.
type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// partTypes are the content part types the real API takes.
var partTypes = []string{"text", "image_url", "input_audio", "refusal", "audio", "file"}

var (
	validRoles   = []string{"system", "developer", "user", "assistant", "tool", "function"}
	toolNameRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

// decodeRequest parses a request body. The first error reports malformed
// JSON (the request is then not recorded); the second reports a decoded
// request that the real API would reject.
func decodeRequest(body []byte) (Request, *apiError, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, &apiError{status: 400, typ: "invalid_request_error",
			message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using " +
				"your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not " +
				"valid JSON. If you have trouble figuring out how to fix this, please contact us through our help " +
				"center at help.openai.com.)"}, nil
	}
	r := Request{Model: w.Model, Stream: w.Stream, Body: body, Temperature: w.Temperature, TopP: w.TopP,
		MaxTokens: max(w.MaxCompletionTokens, w.MaxTokens)}
	r.includeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description,
			Parameters: t.Function.Parameters})
	}
	var bad *apiError
	for i, wm := range w.Messages {
		m := Message{Role: wm.Role, ToolCallID: wm.ToolCallID}
		text, images, err := decodeContent(wm.Content)
		if err != nil && bad == nil {
			bad = invalid(fmt.Sprintf("messages[%d].content", i), "invalid_type",
				"Invalid type for 'messages[%d].content': expected one of a string or array of objects, but got %s instead.",
				i, err.Error())
		}
		if bad == nil {
			bad = checkParts(i, wm)
		}
		m.Content, m.Images = text, images
		for _, tc := range wm.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		r.Messages = append(r.Messages, m)
	}
	if bad == nil {
		bad = validate(w, r)
	}
	return r, nil, bad
}

// decodeContent turns a message content (string, array of parts or null)
// into its text and its image parts.
func decodeContent(raw json.RawMessage) (string, []Image, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	case '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, fmt.Errorf("an array with a non-object element")
		}
		var b strings.Builder
		var images []Image
		for _, p := range parts {
			switch {
			case p.Type == "text":
				b.WriteString(p.Text)
			case p.Type == "image_url" && p.ImageURL != nil:
				images = append(images, Image{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
			}
		}
		return b.String(), images, nil
	default:
		return "", nil, fmt.Errorf("%s", jsonKind(raw[0]))
	}
}

// checkParts applies the real API's rules to the content parts of message
// i: known part types only, and images only in user messages.
func checkParts(i int, wm wireMessage) *apiError {
	raw := bytes.TrimSpace(wm.Content)
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var parts []wirePart
	if json.Unmarshal(raw, &parts) != nil {
		return nil // reported by decodeContent
	}
	for j, p := range parts {
		switch {
		case !slices.Contains(partTypes, p.Type):
			return invalid(fmt.Sprintf("messages[%d].content[%d].type", i, j), "invalid_value",
				"Invalid value: '%s'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.", p.Type)
		case p.Type == "image_url" && (p.ImageURL == nil || p.ImageURL.URL == ""):
			return invalid(fmt.Sprintf("messages[%d].content[%d].image_url", i, j), "missing_required_parameter",
				"Missing required parameter: 'messages[%d].content[%d].image_url.url'.", i, j)
		case p.Type == "image_url" && wm.Role != "user":
			return invalid(fmt.Sprintf("messages[%d].content[%d].type", i, j), "",
				"Image URLs are only allowed for messages with role 'user', but this message with role '%s' contains an image URL.", wm.Role)
		}
	}
	return nil
}

func jsonKind(first byte) string {
	switch first {
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// validate applies the checks of the real API that a client bug could trip:
// missing messages, unknown roles, bad tool definitions (names and
// parameters schemas, checkParameters), and tool
// messages that do not pair up with the assistant tool_calls before them.
func validate(w wireRequest, r Request) *apiError {
	if len(r.Messages) == 0 {
		return invalid("messages", "", "[] is too short - 'messages'")
	}
	if w.StreamOptions != nil && !w.Stream {
		return invalid("stream_options", "invalid_value",
			"The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	for i, t := range w.Tools {
		if t.Type != "function" {
			return invalid(fmt.Sprintf("tools[%d].type", i), "invalid_value",
				"Invalid value: '%s'. Supported values are: 'function' and 'custom'.", t.Type)
		}
		if !toolNameRule.MatchString(t.Function.Name) {
			return invalid(fmt.Sprintf("tools[%d].function.name", i), "invalid_value",
				"Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that "+
					"matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		if e := checkParameters(i, t); e != nil {
			return e
		}
	}
	return validateMessages(r.Messages)
}

// validateMessages checks roles and the pairing of tool calls with tool
// messages: every tool message must answer a call of the assistant message
// directly before it (other tool messages in between), and every such call
// must be answered before the next non-tool message.
func validateMessages(msgs []Message) *apiError {
	var pending []string // call ids of the last assistant message not yet answered
	for i, m := range msgs {
		if !slices.Contains(validRoles, m.Role) {
			return invalid(fmt.Sprintf("messages[%d].role", i), "invalid_value",
				"Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', "+
					"'tool', and 'developer'.", m.Role)
		}
		if m.Role == "tool" {
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return invalid(fmt.Sprintf("messages.[%d].role", i), "",
					"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			return invalid("messages", "",
				"An assistant message with 'tool_calls' must be followed by tool messages responding to each "+
					"'tool_call_id'. The following tool_call_ids did not have response messages: %s",
				strings.Join(pending, ", "))
		}
		if m.Role == "assistant" {
			for _, tc := range m.ToolCalls {
				pending = append(pending, tc.ID)
			}
		}
	}
	if len(pending) > 0 {
		return invalid("messages", "",
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each "+
				"'tool_call_id'. The following tool_call_ids did not have response messages: %s",
			strings.Join(pending, ", "))
	}
	return nil
}
