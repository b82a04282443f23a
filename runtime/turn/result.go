package turn

// Step is one thing that happened during a run (agent.StepEvent): a piece
// of text, a tool call, its result. Type is one of agent's Step* names.
type Step struct {
	Type      string
	Step      int    // the model call it belongs to, from 1
	CallIndex int    // tool_call_delta: which call of the step, from 0
	Text      string // text or text delta
	Tool      string // tool name for tool events
	CallID    string
	Input     string // raw JSON arguments
	Output    string // tool output
	OK        bool   // tool result: the tool reported success
}

// ToolCall is one tool call as a run reports it (agent.ToolCallRecord).
type ToolCall struct {
	Tool   string         `json:"tool"`
	Input  map[string]any `json:"input"`
	Output string         `json:"output"`
}

// Result is how a run ended (agent.AgentResult); /api/execute answers
// with it.
type Result struct {
	Success   bool       `json:"success"`
	Output    string     `json:"output"`
	ToolCalls []ToolCall `json:"toolCalls"`
	// Delivered is true when a tool delivered user-visible text during the
	// run; the final-output fallback is skipped then.
	Delivered bool `json:"-"`
	// Usage adds up the tokens the provider reported (zero when it did not).
	Usage Usage `json:"-"`
	// Artifacts are the files the run sent into its chat, in order.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// Replies are the texts the chat got from the run, in order, as the
	// chat got them (replies, captions, questions).
	Replies []string `json:"replies,omitempty"`
}

// Usage counts tokens over a run's model calls.
type Usage struct {
	// PromptTokens is every input token, whether the provider read it from
	// its prompt cache, wrote it there or neither.
	PromptTokens, CompletionTokens int
	// CachedPromptTokens is the part of PromptTokens the provider read
	// from its prompt cache (OpenAI's cached_tokens, Anthropic's
	// cache_read_input_tokens), billed at a fraction of the price.
	CachedPromptTokens int
}

// Add is u and o counted together.
func (u Usage) Add(o Usage) Usage {
	u.PromptTokens += o.PromptTokens
	u.CachedPromptTokens += o.CachedPromptTokens
	u.CompletionTokens += o.CompletionTokens
	return u
}

// Artifact is a file a run sent into its chat (chat_send_file): what the
// event stream, /api/execute and the chat log tell about it. The bytes are
// the copy ship kept under .ship/files when it sent them, so a download
// gets what the chat got even if the original changes.
type Artifact struct {
	Name string `json:"name"`
	// Kind is media's: image, video, audio, voice or file.
	Kind  string `json:"kind"`
	MIME  string `json:"mime"`
	Bytes int64  `json:"bytes"`
	// Path is the kept copy, relative to the project folder with forward
	// slashes (".ship/files/telegram_chat_42/out-…-chart.png").
	Path string `json:"path"`
	// FileID is the platform's id of the sent file, where it gives one.
	FileID string `json:"fileId,omitempty"`
	// URL downloads the kept copy through the HTTP API (with its token).
	URL string `json:"url,omitempty"`
}
