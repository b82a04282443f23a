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

	if v, err := b.ResumePoints().Load(ctx, "telegram"); err != nil || v != nil {
		t.Fatalf("resume point before any save = %q, %v; want none", v, err)
	}
	if err := a.ResumePoints().Save(ctx, "telegram", []byte("4242")); err != nil {
		t.Fatal(err)
	}
	if err := a.ResumePoints().Save(ctx, "qq.session", []byte(`{"id":"session-7","seq":31}`)); err != nil {
		t.Fatal(err)
	}
	if v, err := b.ResumePoints().Load(ctx, "telegram"); err != nil || string(v) != "4242" {
		t.Errorf("telegram = %q, %v; want 4242", v, err)
	}
	if v, err := b.ResumePoints().Load(ctx, "qq.session"); err != nil || string(v) != `{"id":"session-7","seq":31}` {
		t.Errorf("qq.session = %q, %v; want the saved session", v, err)
	}
}
