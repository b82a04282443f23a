package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/memory"
)

// Names of the notes tools.
const (
	MemoryReadName   = "memory_read"
	MemoryWriteName  = "memory_write"
	MemorySearchName = "memory_search"
)

// Memory returns memory_read, memory_write and memory_search over store.
// Each sees only what the run's own prompt may show: its chat's notes and,
// where memory.personNotesIn allows, the speaking person's; never another
// chat's or another person's.
func Memory(store *memory.Store) []agent.Tool {
	return []agent.Tool{&MemoryRead{Store: store}, &MemoryWrite{Store: store}, &MemorySearch{Store: store}}
}

// notesParam is the "notes" argument: whose notes.
var notesParam = map[string]any{
	"type": "string", "enum": []string{string(memory.KindChat), string(memory.KindPerson)},
	"description": "chat: this chat's notes; person: notes about the person writing to you (only where kept)",
}

// notesScope is the notes the calling run may see; why says what is wrong
// when it may see none.
func notesScope(ctx context.Context, s *memory.Store) (sc memory.Scope, why string) {
	req, ok := dispatch.RequestFromContext(ctx)
	if !ok || req.ChatKey == "" {
		return memory.Scope{}, "notes are kept only in a chat"
	}
	return s.ScopeOf(ctx, req.ChatKey, req), ""
}

// notesRef is the Ref the "notes" argument names within the calling run's
// scope; why says what is wrong when it names none.
func notesRef(ctx context.Context, s *memory.Store, notes string) (r memory.Ref, why string) {
	sc, why := notesScope(ctx, s)
	if why != "" {
		return memory.Ref{}, why
	}
	switch memory.Kind(notes) {
	case memory.KindChat, "":
		return sc.Chat, ""
	case memory.KindPerson:
		if sc.Person.ID == "" {
			return memory.Ref{}, "notes about a person are not kept in this chat (memory.personNotesIn: by default only in private chats); use the chat's notes"
		}
		return sc.Person, ""
	}
	return memory.Ref{}, `notes must be "chat" or "person"`
}

// MemoryRead is memory_read: the whole text of the chat's or the person's
// notes (the prompt shows only their start when they are long).
type MemoryRead struct{ Store *memory.Store }

// Definition describes memory_read to the model.
func (t *MemoryRead) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name:        MemoryReadName,
		Description: "Read the long-term notes in full: this chat's, or the person's writing to you. The system prompt shows only their start when they are long.",
		Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"notes": notesParam},
		},
	}
}

// Call reads the notes.
func (t *MemoryRead) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Notes string `json:"notes"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failure(`arguments must be an object with an optional string field notes ("chat" or "person")`)
	}
	r, why := notesRef(ctx, t.Store, in.Notes)
	if why != "" {
		return failure(why)
	}
	text, err := t.Store.Read(ctx, r)
	if err != nil {
		return failure("reading the notes failed: " + err.Error())
	}
	return result(true, map[string]any{"notes": r.Kind, "text": text, "bytes": len(text), "maxBytes": t.Store.MaxBytes()})
}

// MemoryWrite is memory_write: add to, or replace, the chat's or the
// person's notes.
type MemoryWrite struct{ Store *memory.Store }

// Definition describes memory_write to the model.
func (t *MemoryWrite) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: MemoryWriteName,
		Description: "Keep something worth remembering in later conversations, as Markdown: in this chat's notes, or in the notes " +
			"about the person writing to you (only where kept). mode append (default) adds a line; replace rewrites the notes " +
			"(an empty text removes them). Notes are bounded in size: condense them with replace when they grow. " +
			"Keep only what the user would want remembered, never secrets.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"notes": notesParam,
				"text":  map[string]any{"type": "string", "description": "Markdown to add, or the whole new notes with mode replace"},
				"mode":  map[string]any{"type": "string", "enum": []string{"append", "replace"}},
			},
			"required": []string{"notes", "text"},
		},
	}
}

// Call writes the notes; a refusal (too large, not allowed here) changes
// nothing and says why.
func (t *MemoryWrite) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Notes string `json:"notes"`
		Text  string `json:"text"`
		Mode  string `json:"mode"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return failure(`arguments must be an object with string fields notes ("chat" or "person"), text and mode ("append" or "replace")`)
	}
	r, why := notesRef(ctx, t.Store, in.Notes)
	if why != "" {
		return failure(why)
	}
	var err error
	switch in.Mode {
	case "", "append":
		if strings.TrimSpace(in.Text) == "" {
			return failure("text is empty: nothing to add")
		}
		err = t.Store.Append(ctx, r, in.Text)
	case "replace":
		err = t.Store.Write(ctx, r, in.Text)
	default:
		return failure(`mode must be "append" or "replace"`)
	}
	if err != nil {
		if errors.Is(err, memory.ErrTooLarge) || errors.Is(err, memory.ErrInvalid) {
			return failure("not saved: " + err.Error())
		}
		return failure("saving the notes failed: " + err.Error())
	}
	text, _ := t.Store.Read(ctx, r) // only to report the size
	return result(true, map[string]any{"notes": r.Kind, "bytes": len(text), "maxBytes": t.Store.MaxBytes()})
}

// MemorySearch is memory_search: the lines of the notes this run may see
// that mention every word asked.
type MemorySearch struct{ Store *memory.Store }

// Definition describes memory_search to the model.
func (t *MemorySearch) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name:        MemorySearchName,
		Description: "Search this chat's long-term notes (and the person's, where kept) for lines containing every word of query, case-insensitively.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"query": map[string]any{"type": "string"}},
			"required":   []string{"query"},
		},
	}
}

// Call searches.
func (t *MemorySearch) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(args, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return failure("arguments must be an object with a non-empty string field query")
	}
	sc, why := notesScope(ctx, t.Store)
	if why != "" {
		return failure(why)
	}
	hits, err := t.Store.Search(ctx, sc, in.Query)
	if err != nil {
		return failure("searching the notes failed: " + err.Error())
	}
	fields := map[string]any{"hits": hits}
	if len(hits) == 0 {
		fields["hits"], fields["note"] = []memory.Hit{}, "no line of the notes mentions all of that"
	}
	return result(true, fields)
}
