package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/runtime/usage"
)

// A token budget counts the turns every replica answered: tokens spent
// through one replica use up the budget on the other, turns counted on
// both at once are all counted, and the day's report is the cluster's.
func TestTokenBudgetsCountEveryReplica(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ta, err := usage.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := usage.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ta.Share(a.Table("usage"))
	tb.Share(b.Table("usage"))
	ctx := context.Background()
	budget := usage.Budget{PerUserPerDay: 1000}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tally := ta
			if i%2 == 1 {
				tally = tb
			}
			if err := tally.Add(ctx, "telegram:chat:5", "telegram:5", usage.Counts{Input: 90, Output: 10}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var ex *usage.ExceededError
	if err := tb.Check(ctx, budget, "telegram:chat:5", "telegram:5", nil); !errors.As(err, &ex) || ex.Used != 1000 {
		t.Fatalf("after 1000 tokens spent over both replicas, b let the person in: %v", err)
	}
	if err := ta.Check(ctx, budget, "telegram:chat:5", "telegram:6", nil); err != nil {
		t.Fatalf("another person was refused: %v", err)
	}
	r, err := ta.Report(ctx, "", 5)
	if err != nil || r.Total.Turns != 10 || r.Total.Total() != 1000 || len(r.People) != 1 || r.People[0].Key != "telegram:5" {
		t.Fatalf("the cluster's report: %+v %v", r, err)
	}
}
