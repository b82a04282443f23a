package adapters

import (
	"context"
	"errors"
	"testing"
)

func TestGateHoldStatus(t *testing.T) {
	ctx := context.Background()
	var box StatusBox
	box.Set("x", "starting", "")

	// Alone (nil gate): connect runs at once and standby never shows.
	var seen []string
	err := Gate(nil).Hold(ctx, "x", &box, func(context.Context) error {
		seen = append(seen, box.Get().State)
		return nil
	})
	if err != nil || len(seen) != 1 || seen[0] != "starting" {
		t.Fatalf("nil gate: err %v, states seen by connect %q", err, seen)
	}

	// A gate that grants twice, withdrawing the first time: standby before,
	// between and after; connect's own state while it runs.
	grants := func(ctx context.Context, name string, connect func(context.Context) error) error {
		for range 2 {
			if s := box.Get(); s.State != StateStandby || s.Detail != StandbyDetail || s.Name != name {
				t.Errorf("before connect: %+v, want standby", s)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel() // withdrawn
			if err := connect(cctx); err != nil {
				return err
			}
		}
		return nil
	}
	calls := 0
	err = Gate(grants).Hold(ctx, "x", &box, func(context.Context) error {
		calls++
		box.Set("x", "running", "")
		return nil
	})
	if err != nil || calls != 2 || box.Get().State != StateStandby {
		t.Fatalf("err %v, %d calls, status %+v: want 2 calls and standby after", err, calls, box.Get())
	}

	// connect giving up keeps its own state, and the error comes back.
	boom := errors.New("refused for good")
	once := func(ctx context.Context, _ string, connect func(context.Context) error) error { return connect(ctx) }
	err = Gate(once).Hold(ctx, "x", &box, func(context.Context) error {
		box.Set("x", "failed", boom.Error())
		return boom
	})
	if !errors.Is(err, boom) || box.Get().State != "failed" {
		t.Fatalf("err %v, status %+v: want the error and failed", err, box.Get())
	}
}
