package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/memory"
)

// Notes written through one replica are in the chat's next prompt on
// another, and two replicas appending at once lose neither line: the
// notes are one state over the shared table.
func TestNotesAreOneStateAcrossReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	na, err := memory.Open(memory.Options{Table: a.Table("memory")})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := memory.Open(memory.Options{Table: b.Table("memory")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	route := dispatch.RequestContext{Channel: "telegram", ChatID: "77", ChatKey: "telegram:chat:77", UserID: "77", ChatType: "private"}
	r := memory.Ref{Kind: memory.KindChat, ID: route.ChatKey}
	if err := na.Append(ctx, r, "- written on a"); err != nil {
		t.Fatal(err)
	}
	if p := nb.Prompt(ctx, route.ChatKey, route); !strings.Contains(p, "- written on a") {
		t.Fatalf("replica b's prompt lacks a's note:\n%s", p)
	}
	done := make(chan error, 2)
	go func() { done <- na.Append(ctx, r, "- again on a") }()
	go func() { done <- nb.Append(ctx, r, "- meanwhile on b") }()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got, err := na.Read(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"- written on a", "- again on a", "- meanwhile on b"} {
		if !strings.Contains(got, line) {
			t.Errorf("notes after appends on both replicas lack %q:\n%s", line, got)
		}
	}
	if list, err := nb.List(ctx); err != nil || len(list) != 1 || list[0].ID != route.ChatKey {
		t.Errorf("list on b: %+v %v", list, err)
	}
}
