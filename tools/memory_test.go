package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/tools"
)

// memoryTools are the three notes tools by name, over notes in a fresh
// folder.
func memoryTools(t *testing.T) (map[string]func(ctx context.Context, args string) (bool, string), *memory.Store) {
	t.Helper()
	s, err := memory.Open(memory.Options{Dir: t.TempDir(), MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]func(context.Context, string) (bool, string){}
	for _, tool := range tools.Memory(s) {
		tool := tool
		out[tool.Definition().Name] = func(ctx context.Context, args string) (bool, string) {
			res := tool.Call(ctx, json.RawMessage(args))
			return res.OK, res.Content
		}
	}
	return out, s
}

func TestMemoryToolsReachOnlyTheRunsOwnNotes(t *testing.T) {
	ts, s := memoryTools(t)
	bg := context.Background()
	dm := dispatch.WithRequest(bg, dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatKey: "telegram:chat:42", UserID: "42", ChatType: "private"})
	group := dispatch.WithRequest(bg, dispatch.RequestContext{Channel: "telegram", ChatID: "-5", ChatKey: "telegram:chat:-5", UserID: "42", ChatType: "group"})
	must := func(ok bool, content string) string {
		t.Helper()
		if !ok {
			t.Fatalf("tool failed: %s", content)
		}
		return content
	}

	must(ts[tools.MemoryWriteName](dm, `{"notes":"chat","text":"- deploy key is in the vault"}`))
	must(ts[tools.MemoryWriteName](dm, `{"notes":"person","text":"- likes short answers"}`))
	must(ts[tools.MemoryWriteName](group, `{"notes":"chat","text":"- the vault moved"}`))

	if got := must(ts[tools.MemoryReadName](dm, `{}`)); !strings.Contains(got, "deploy key") || strings.Contains(got, "moved") {
		t.Fatalf("memory_read in the private chat: %s", got)
	}
	if got := must(ts[tools.MemoryReadName](dm, `{"notes":"person"}`)); !strings.Contains(got, "short answers") {
		t.Fatalf("memory_read of the person: %s", got)
	}
	if ok, got := ts[tools.MemoryReadName](group, `{"notes":"person"}`); ok || !strings.Contains(got, "not kept in this chat") {
		t.Fatalf("memory_read of the person in a group: %v %s", ok, got)
	}
	if got := must(ts[tools.MemorySearchName](group, `{"query":"vault"}`)); !strings.Contains(got, "moved") || strings.Contains(got, "deploy key") {
		t.Fatalf("memory_search in the group saw: %s", got)
	}
	if got := must(ts[tools.MemorySearchName](dm, `{"query":"short"}`)); !strings.Contains(got, "short answers") {
		t.Fatalf("memory_search in the private chat missed the person's notes: %s", got)
	}

	// Bad input: a clear failure, nothing changed.
	for _, args := range []string{`{"notes":"chat","text":"` + strings.Repeat("y", 120) + `"}`, `{"notes":"chat","text":"x","mode":"prepend"}`,
		`{"notes":"telegram:chat:-5","text":"x"}`, `{"notes":"chat","text":"  "}`, `[1]`} {
		if ok, got := ts[tools.MemoryWriteName](dm, args); ok || !strings.Contains(got, `"success":false`) {
			t.Errorf("memory_write %s: %v %s", args, ok, got)
		}
	}
	if got, _ := s.Read(bg, memory.Ref{Kind: memory.KindChat, ID: "telegram:chat:42"}); got != "- deploy key is in the vault\n" {
		t.Fatalf("refused writes changed the notes: %q", got)
	}
	if ok, got := ts[tools.MemoryWriteName](dm, `{"notes":"chat","text":"`+strings.Repeat("y", 120)+`"}`); ok || !strings.Contains(got, "limit is 100") {
		t.Fatalf("too large: %s", got)
	}
	must(ts[tools.MemoryWriteName](dm, `{"notes":"chat","text":"- condensed","mode":"replace"}`))
	if got, _ := s.Read(bg, memory.Ref{Kind: memory.KindChat, ID: "telegram:chat:42"}); got != "- condensed\n" {
		t.Fatalf("replace: %q", got)
	}
	if ok, got := ts[tools.MemoryReadName](bg, `{}`); ok || !strings.Contains(got, "only in a chat") {
		t.Fatalf("outside a chat: %v %s", ok, got)
	}
}
