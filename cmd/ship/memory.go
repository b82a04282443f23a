package main

import (
	"context"
	"fmt"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/server/console"
	"github.com/shipmyagent/ship/tools"
)

// newNotes opens the long-term notes as ship.json's memory section says:
// files under .ship/memory alone, the group's shared "memory" table in
// cluster mode (a note written through one replica is in the next prompt
// on any other). Nil when memory.notes is false.
func newNotes(cfg config.Config, rep *replica) (*memory.Store, error) {
	if !cfg.Memory.NotesOn() {
		return nil, nil
	}
	o := memory.Options{
		Dir: cfg.StatePath("memory"), PersonNotesIn: cfg.Memory.PersonNotesIn,
		MaxBytes: cfg.Memory.MaxBytes, PromptBytes: cfg.Memory.PromptBytes,
	}
	if rep != nil {
		o.Table = rep.node.Table("memory")
	}
	s, err := memory.Open(o)
	if err != nil {
		return nil, fmt.Errorf("opening the notes: %w", err)
	}
	return s, nil
}

// notesTools are memory_read, memory_write and memory_search; none when
// the notes are off.
func notesTools(s *memory.Store) []agent.Tool {
	if s == nil {
		return nil
	}
	return tools.Memory(s)
}

// consoleNotes is the console's view of the notes; nil when they are off.
func consoleNotes(s *memory.Store) console.NotesService {
	if s == nil {
		return nil
	}
	return notesForConsole{s}
}

// notesForConsole adapts a memory.Store to console.NotesService.
type notesForConsole struct{ s *memory.Store }

func (n notesForConsole) List(ctx context.Context) ([]console.Notes, error) {
	list, err := n.s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.Notes, len(list))
	for i, note := range list {
		out[i] = console.Notes{Kind: string(note.Kind), ID: note.ID, Text: note.Text}
	}
	return out, nil
}

func (n notesForConsole) Read(ctx context.Context, kind, id string) (string, error) {
	return n.s.Read(ctx, memory.Ref{Kind: memory.Kind(kind), ID: id})
}

func (n notesForConsole) Write(ctx context.Context, kind, id, text string) error {
	return n.s.Write(ctx, memory.Ref{Kind: memory.Kind(kind), ID: id}, text)
}

func (n notesForConsole) MaxBytes() int { return n.s.MaxBytes() }
