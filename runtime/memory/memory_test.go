package memory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/runtime/records"
)

// stores are the two backings a Store has: files (alone) and a shared
// table (cluster mode); the tests run against both.
func stores(t *testing.T, o memory.Options) map[string]*memory.Store {
	t.Helper()
	out := map[string]*memory.Store{}
	files := o
	files.Dir = t.TempDir()
	table := o
	table.Table = records.NewMemory()
	for name, opts := range map[string]memory.Options{"files": files, "table": table} {
		s, err := memory.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

var (
	private = dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatKey: "telegram:chat:42", UserID: "42", ChatType: "private"}
	group   = dispatch.RequestContext{Channel: "telegram", ChatID: "-7", ChatKey: "telegram:chat:-7", UserID: "42", ChatType: "supergroup"}
)

func TestWriteAppendReadAndBounds(t *testing.T) {
	for name, s := range stores(t, memory.Options{MaxBytes: 64}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := memory.Ref{Kind: memory.KindChat, ID: "telegram:chat:42"}
			if err := s.Write(ctx, r, "- likes tea"); err != nil {
				t.Fatal(err)
			}
			if err := s.Append(ctx, r, "- release on Fridays"); err != nil {
				t.Fatal(err)
			}
			got, err := s.Read(ctx, r)
			if err != nil || got != "- likes tea\n- release on Fridays\n" {
				t.Fatalf("read %q, %v", got, err)
			}
			err = s.Append(ctx, r, strings.Repeat("x", 60))
			if !errors.Is(err, memory.ErrTooLarge) || !strings.Contains(err.Error(), "limit is 64") {
				t.Fatalf("past the bound: %v", err)
			}
			if again, _ := s.Read(ctx, r); again != got {
				t.Fatalf("a refused write changed the notes: %q", again)
			}
			if err := s.Write(ctx, r, "bad \xff"); !errors.Is(err, memory.ErrInvalid) {
				t.Fatalf("invalid UTF-8: %v", err)
			}
			if err := s.Write(ctx, r, "  "); err != nil {
				t.Fatal(err)
			}
			if list, err := s.List(ctx); err != nil || len(list) != 0 {
				t.Fatalf("cleared notes still listed: %v %v", list, err)
			}
		})
	}
}

// A chat's notes are plain Markdown in a file named after the escaped
// chatKey, and an edit by hand is what the next prompt shows.
func TestFilesArePlainAndHandEditsShow(t *testing.T) {
	dir := t.TempDir()
	s, err := memory.Open(memory.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: private.ChatKey}, "# Team\n- deploys on Fridays"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "chats", "telegram_chat_42.md")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "# Team\n- deploys on Fridays\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	if err := os.WriteFile(path, []byte("# Team\n- deploys on Tuesdays now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := s.Prompt(ctx, private.ChatKey, private); !strings.Contains(p, "Tuesdays") || strings.Contains(p, "Fridays") {
		t.Fatalf("prompt after a hand edit:\n%s", p)
	}
	if err := s.Write(ctx, memory.Ref{Kind: memory.KindPerson, ID: "qq:../../etc"}, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "people", "qq_%2E%2E%2F%2E%2E%2Fetc.md")); err != nil {
		t.Fatalf("a person's file is not under people/ escaped: %v", err)
	}
}

func TestPromptScopes(t *testing.T) {
	for _, in := range []string{"", memory.PersonAll, memory.PersonNone} {
		for name, s := range stores(t, memory.Options{PersonNotesIn: in}) {
			t.Run(in+"/"+name, func(t *testing.T) {
				ctx := context.Background()
				must(t, s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: private.ChatKey}, "private chat note"))
				must(t, s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: group.ChatKey}, "group chat note"))
				must(t, s.Write(ctx, memory.Ref{Kind: memory.KindPerson, ID: "telegram:42"}, "person note"))

				inPrivate, inGroup := s.Prompt(ctx, private.ChatKey, private), s.Prompt(ctx, group.ChatKey, group)
				if !strings.Contains(inPrivate, "private chat note") || strings.Contains(inPrivate, "group chat note") {
					t.Fatalf("private prompt:\n%s", inPrivate)
				}
				if !strings.Contains(inGroup, "group chat note") || strings.Contains(inGroup, "private chat note") {
					t.Fatalf("group prompt:\n%s", inGroup)
				}
				wantPrivate, wantGroup := in != memory.PersonNone, in == memory.PersonAll
				if got := strings.Contains(inPrivate, "person note"); got != wantPrivate {
					t.Fatalf("person note in private chat: %v, want %v", got, wantPrivate)
				}
				if got := strings.Contains(inGroup, "person note"); got != wantGroup {
					t.Fatalf("person note in group: %v, want %v", got, wantGroup)
				}
			})
		}
	}
}

func TestPromptIsBoundedAndEmptyWithoutNotes(t *testing.T) {
	s, err := memory.Open(memory.Options{Dir: t.TempDir(), PromptBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if p := s.Prompt(ctx, private.ChatKey, private); p != "" {
		t.Fatalf("prompt without notes: %q", p)
	}
	must(t, s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: private.ChatKey}, "start "+strings.Repeat("é", 500)+" END"))
	p := s.Prompt(ctx, private.ChatKey, private)
	if !strings.Contains(p, "start ") || strings.Contains(p, "END") || !strings.Contains(p, "memory_read shows the rest") {
		t.Fatalf("a long note is not cut:\n%s", p)
	}
	if len(p) > 400 {
		t.Fatalf("prompt is %d bytes for a 100-byte bound", len(p))
	}
}

func TestSearchSeesOnlyTheScope(t *testing.T) {
	for name, s := range stores(t, memory.Options{}) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			must(t, s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: private.ChatKey}, "- the wifi password is on the fridge"))
			must(t, s.Write(ctx, memory.Ref{Kind: memory.KindChat, ID: group.ChatKey}, "- the WIFI password is hunter2"))
			hits, err := s.Search(ctx, s.ScopeOf(ctx, private.ChatKey, private), "WiFi password")
			if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Text, "fridge") || hits[0].Line != 1 {
				t.Fatalf("hits %+v, %v", hits, err)
			}
			if _, err := s.Search(ctx, s.ScopeOf(ctx, private.ChatKey, private), "  "); !errors.Is(err, memory.ErrInvalid) {
				t.Fatalf("empty search: %v", err)
			}
		})
	}
}

func TestOpenRefusesNonsense(t *testing.T) {
	if _, err := memory.Open(memory.Options{Dir: t.TempDir(), PersonNotesIn: "groups"}); err == nil {
		t.Fatal("personNotesIn groups accepted")
	}
	s, err := memory.Open(memory.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), memory.Ref{Kind: memory.KindChat, ID: ""}, "x"); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("empty chatKey: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A message without a sender (a channel post) speaks for nobody: no
// person's notes are shown, not even ones kept under an empty user id.
func TestNoSenderNoPersonNotes(t *testing.T) {
	s, err := memory.Open(memory.Options{Dir: t.TempDir(), PersonNotesIn: memory.PersonAll})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must(t, s.Write(ctx, memory.Ref{Kind: memory.KindPerson, ID: "telegram:"}, "nobody's note"))
	route := private
	route.UserID = ""
	if sc := s.ScopeOf(ctx, route.ChatKey, route); sc.Person.ID != "" {
		t.Fatalf("a message without a sender has person notes %q", sc.Person.ID)
	}
	if p := s.Prompt(ctx, route.ChatKey, route); strings.Contains(p, "nobody's note") {
		t.Fatalf("prompt:\n%s", p)
	}
}
