package jobs

import (
	"errors"
	"testing"
	"time"
)

// TestSetLimitsHoldsTheNextStart: tools.jobs reloaded while jobs run: a
// raised per-chat limit lets the next job start, a lowered one refuses it
// without stopping the jobs that run, and the new timeout is offered.
func TestSetLimitsHoldsTheNextStart(t *testing.T) {
	m, ch := open(t, Options{PerChat: 1, Max: 10})
	release := make(chan struct{})
	if _, err := m.Start(spec("a"), 0, blocker(release)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(spec("a"), 0, blocker(release)); !errors.Is(err, ErrChatLimit) {
		t.Fatalf("second job in chat a before the reload: %v", err)
	}
	m.SetLimits(2, 10, time.Minute)
	if _, err := m.Start(spec("a"), 0, blocker(release)); err != nil {
		t.Fatalf("second job in chat a after raising the limit: %v", err)
	}
	if m.MaxDuration() != time.Minute {
		t.Errorf("MaxDuration = %s after the reload", m.MaxDuration())
	}
	m.SetLimits(1, 0, 0)
	if _, err := m.Start(spec("a"), 0, blocker(release)); !errors.Is(err, ErrChatLimit) {
		t.Fatalf("a job over the lowered limit: %v", err)
	}
	if m.MaxDuration() != DefaultMaxDuration {
		t.Errorf("MaxDuration = %s, want the default back", m.MaxDuration())
	}
	running := 0
	for _, j := range m.List("") {
		if j.State == Running {
			running++
		}
	}
	if running != 2 {
		t.Errorf("%d jobs running after lowering the limit, want the 2 started", running)
	}
	close(release)
	for range 2 {
		<-ch
	}
}
