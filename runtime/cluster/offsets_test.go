package cluster

import (
	"context"
	"testing"
)

// What one replica saves of a platform connection is what the next holder,
// on another replica, resumes from.
func TestResumePointsAreSharedBetweenReplicas(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ctx := context.Background()

	if off, err := b.Offsets("telegram").LoadOffset(ctx); err != nil || off != 0 {
		t.Fatalf("offset before any save = %d, %v; want 0", off, err)
	}
	if id, seq, err := b.Sessions("qq").LoadSession(ctx); err != nil || id != "" || seq != 0 {
		t.Fatalf("session before any save = %q %d, %v; want none", id, seq, err)
	}
	if err := a.Offsets("telegram").SaveOffset(ctx, 4242); err != nil {
		t.Fatal(err)
	}
	if err := a.Sessions("qq").SaveSession(ctx, "session-7", 31); err != nil {
		t.Fatal(err)
	}
	if off, err := b.Offsets("telegram").LoadOffset(ctx); err != nil || off != 4242 {
		t.Errorf("offset = %d, %v; want 4242", off, err)
	}
	if id, seq, err := b.Sessions("qq").LoadSession(ctx); err != nil || id != "session-7" || seq != 31 {
		t.Errorf("session = %q %d, %v; want session-7 31", id, seq, err)
	}
}
