package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/media"
)

// A message accepted with its files and a ready answer (a voice note that
// could not be transcribed), then a crash: after restart the journal still
// holds both, and the answer goes out without asking the model.
func TestRecoveryKeepsFilesAndAnAnswer(t *testing.T) {
	dir := t.TempDir()
	files := []media.File{{Kind: media.KindVoice, Path: ".ship/files/x/m9-v.ogg", MIME: "audio/ogg", Bytes: 3}}
	const answer = "Sorry, I could not transcribe your voice message (the endpoint answered 503). Please try again, or type it."
	writeJournal(t, dir, func(j *journal.Journal) {
		it := journalItem("v", "9", "m9", "[voice message (3 s); transcription failed: the endpoint answered 503]")
		it.Files, it.Answer = files, answer
		_ = j.Add(it)
	})
	j, items, err := journal.Open(filepath.Join(dir, ".ship", "pending.jsonl"), false)
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	if len(items) != 1 || len(items[0].Files) != 1 || items[0].Files[0] != files[0] || items[0].Answer != answer {
		t.Fatalf("journal items %+v", items)
	}
	h := newHarness(t, harnessOptions{dir: dir, journal: true})
	if n := h.engine.Recover(context.Background()); n != 1 {
		t.Fatalf("recovered %d, want 1", n)
	}
	h.waitIdle()
	if got := h.out.texts(chatKeyOf("9")); len(got) != 1 || got[0] != answer {
		t.Errorf("replies %q, want the answer once", got)
	}
	if n := h.fake.RequestCount(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}
