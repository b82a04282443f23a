package contacts_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/records"
)

// Two replicas learning one person at once keep both sightings: the
// private chat learned on one and the group learned later on the other.
func TestSharedBookMergesWhatEachReplicaLearned(t *testing.T) {
	tab := records.NewMemory()
	a, b := contacts.OpenShared(tab, zerolog.Nop()), contacts.OpenShared(tab, zerolog.Nop())
	ctx := context.Background()
	a.Learn(ctx, msg("telegram", "telegram:chat:77", "77", "private", "77", "ann", "1"))
	b.Learn(ctx, msg("telegram", "telegram:chat:-1005", "-1005", "supergroup", "77", "ann", "9"))
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	c := contacts.OpenShared(tab, zerolog.Nop())
	got, err := c.Find("@ann")
	if err != nil {
		t.Fatal(err)
	}
	if got.Private == nil || got.Private.ChatID != "77" || got.Last.ChatID != "-1005" {
		t.Fatalf("merged contact = %+v (private %+v), want private 77 and last -1005", got, got.Private)
	}
	if _, err := a.Find("telegram:77"); err != nil {
		t.Errorf("the replica that learned the private chat: %v", err)
	}
}
