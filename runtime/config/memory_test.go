package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMemorySectionIsRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"memory": {"personNotesIn": "all", "maxBytes": 8192, "promptBytes": 2048}}`)
	cfg, err := Load(dir, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Memory; m.PersonNotesIn != "all" || m.MaxBytes != 8192 || m.PromptBytes != 2048 || !m.NotesOn() {
		t.Errorf("memory = %+v", m)
	}
	write(t, dir, FileName, `{"memory": {"notes": false}}`)
	if cfg, err = Load(dir, envOf(nil)); err != nil || cfg.Memory.NotesOn() {
		t.Errorf("notes: false gives %+v, %v", cfg.Memory, err)
	}
}

func TestBadMemorySectionStopsStartUp(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{`{"memory": {"personNotesIn": "groups"}}`, `memory.personNotesIn "groups"`},
		{`{"memory": {"maxBytes": -1}}`, "memory.maxBytes is -1"},
		{`{"memory": {"promptBytes": 1000000}}`, "memory.promptBytes is 1000000"},
		{`{"memory": {"personNotes": "all"}}`, "unknown field"},
	} {
		dir := t.TempDir()
		write(t, dir, FileName, c.file)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an invalid-configuration error saying %q", c.file, err, c.want)
		}
	}
}
