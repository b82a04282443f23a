// Package turn is the one value that describes a turn: who it acts for
// (Identity), where its answer goes (Route), what is asked (Text, Files, a
// Preset call) and how it is answered (Model, Tools). The front door builds
// it once; the queue, the pending-work journal and cluster mode carry it
// whole, so a new per-turn option is one field here, not one in each.
//
// It is a leaf: it imports no other ship package, so every part of ship
// may hold a Turn. The types it is made of are the ones the rest of ship
// uses (dispatch.RequestContext is a Route, media.File a File,
// agent.PresetCall a Call, llm.Override a Model).
package turn

import "encoding/json"

// Turn is one message to answer and everything its run needs to know.
// Its JSON is the pending-work journal's (and the cluster queue's) record
// of a turn: the field names are a contract with files written earlier.
type Turn struct {
	// ID names the run (the requestId in logs, the taskId of its events).
	ID      string `json:"id"`
	ChatKey string `json:"chatKey"`
	// Route is where replies go: the message's own chat, topic and id, or
	// for a scheduled task its target chat.
	Route Route `json:"request"`
	// Text is what the model sees as the user's message.
	Text string `json:"text"`
	// Identity is who the run acts for in the tool policy when it is not
	// the sender ("api:ci-bot", "scheduler:daily-report"); "" means the
	// route's "channel:userId".
	Identity string `json:"identity,omitempty"`
	// Files are the message's stored files (references, not bytes).
	Files []File `json:"files,omitempty"`
	// Preset calls run before the model's first answer: a call someone
	// approved, run exactly as asked (a resumed run still runs exactly
	// what was approved; the grant allows it once).
	Preset []Call `json:"preset,omitempty"`
	// Notice, when set, is sent to the chat before the run starts (who
	// approved the preset call), so it comes before the answer.
	Notice string `json:"notice,omitempty"`
	// Tools is the request layer of the tool policy: rules an API request
	// added for its own run (it can only narrow).
	Tools Tools `json:"tools,omitzero"`
	// Model is the model and call options the request asked for; zero:
	// the chat's model as configured.
	Model Model `json:"llm,omitzero"`
	// Answer, when set, is the whole reply and the model is not run (a
	// voice note that could not be transcribed).
	Answer string `json:"answer,omitempty"`
	// Output, when set, is the schema the run's final output must match
	// (a scheduled task's outputSchema): the engine holds the output back,
	// checks it and has the model repair it before anything is sent.
	Output *OutputCheck `json:"output,omitempty"`
}

// OutputCheck is the output guardrail of a turn: who declared it (Kind
// "task" or "skill", and its Name) and the JSON Schema, carried whole so
// that a resumed run checks what the task said when it fired.
type OutputCheck struct {
	Kind   string          `json:"kind"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
}

// Output check kinds: who declared the schema.
const (
	CheckTask  = "task"
	CheckSkill = "skill"
)

// Route says where a message came from, so that a reply sent from deep
// inside a tool call finds its way back to the same chat, topic and
// message (dispatch.RequestContext).
type Route struct {
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chatId,omitempty"`
	// MessageThreadID is a numeric topic id (a forum topic; 0 when none).
	MessageThreadID int64 `json:"messageThreadId,omitempty"`
	// ThreadID is a string thread id for platforms that use one.
	ThreadID  string `json:"threadId,omitempty"`
	ChatKey   string `json:"chatKey,omitempty"`
	UserID    string `json:"userId,omitempty"`
	ChatType  string `json:"chatType,omitempty"`
	Username  string `json:"username,omitempty"`
	MessageID string `json:"messageId,omitempty"`
}

// File is a file stored for a message (media.File): the log and the
// journal keep references, never bytes.
type File struct {
	Kind string `json:"kind"`
	// Path is relative to the project folder, with forward slashes
	// (".ship/files/telegram_chat_42/17-photo.jpg").
	Path  string `json:"path"`
	MIME  string `json:"mime,omitempty"`
	Bytes int64  `json:"bytes"`
	// Name is the file's name as the sender's app gave it, if any.
	Name string `json:"name,omitempty"`
}

// Call is a tool call made for the model before it answers
// (agent.PresetCall).
type Call struct {
	Tool string
	// Args is the call's JSON arguments, exactly as approved.
	Args string
}

// Tools narrows the tool policy for one turn (policy.Narrowing has the
// same fields and converts to and from it).
type Tools struct {
	Deny            []string `json:"deny,omitempty"`
	RequireApproval []string `json:"requireApproval,omitempty"`
}

// Model is what one request asks of the model for its own run
// (llm.Override): a configured model by name ("" keeps the chat's) and
// call options.
type Model struct {
	Model string `json:"model,omitempty"`
	CallOptions
}

// CallOptions tune the model calls of one run (llm.CallOptions). A zero
// field leaves the model's own setting.
type CallOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"topP,omitempty"`
	MaxTokens   int      `json:"maxTokens,omitempty"`
}
