package config

import "fmt"

// MemoryConfig is the "memory" section of ship.json: the long-term notes
// (runtime/memory), kept under .ship/memory/ (a shared table in cluster
// mode).
type MemoryConfig struct {
	// Notes switches the notes off with false (the memory_* tools, the
	// prompt's "# Notes" and /memory go away); on by default.
	Notes *bool `json:"notes,omitempty"`
	// PersonNotesIn is where notes about a person are shown and written:
	// "private" (default: their private chats with the bot), "all" (groups
	// too) or "none".
	PersonNotesIn string `json:"personNotesIn,omitempty"`
	// MaxBytes bounds one chat's or one person's notes (default 16384);
	// PromptBytes bounds what of each goes into a prompt (default 4096).
	MaxBytes    int `json:"maxBytes,omitempty"`
	PromptBytes int `json:"promptBytes,omitempty"`
}

// Limits a notes setting may take: a prompt is not the place for more
// than 64 KiB of notes, nor a notes file for more than 256 KiB (in a
// cluster one set of notes is one message, under NATS's 1 MB default
// max_payload with room to spare).
const (
	maxNotesBytes       = 256 << 10
	maxNotesPromptBytes = 64 << 10
)

// NotesOn reports whether long-term notes are kept.
func (m MemoryConfig) NotesOn() bool { return m.Notes == nil || *m.Notes }

// validate checks the section's values.
func (m MemoryConfig) validate() error {
	switch m.PersonNotesIn {
	case "", "private", "all", "none":
	default:
		return fmt.Errorf("%w: memory.personNotesIn %q must be \"private\" (the default), \"all\" or \"none\"", ErrInvalid, m.PersonNotesIn)
	}
	if m.MaxBytes < 0 || m.MaxBytes > maxNotesBytes {
		return fmt.Errorf("%w: memory.maxBytes is %d; it must be between 1 and %d (0: the default, 16384)", ErrInvalid, m.MaxBytes, maxNotesBytes)
	}
	if m.PromptBytes < 0 || m.PromptBytes > maxNotesPromptBytes {
		return fmt.Errorf("%w: memory.promptBytes is %d; it must be between 1 and %d (0: the default, 4096)", ErrInvalid, m.PromptBytes, maxNotesPromptBytes)
	}
	return nil
}
