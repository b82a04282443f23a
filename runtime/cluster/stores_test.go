package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/tasks"
)

// The stores that keep their state in shared records (runtime/records)
// behave as one across replicas: these tests run them over two replicas'
// tables of one JetStream.

func testCatalog(t *testing.T) *models.Catalog {
	t.Helper()
	cat, err := models.New(llm.Config{Provider: "offline", Models: map[string]llm.Config{
		"fast": {Provider: "deepseek", Model: "deepseek-chat", APIKey: "sk-deepseek-123"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// A /model made through one replica is the chat's model on the other at
// once (its next turn may run there); a choice of a model that left
// ship.json is ignored, with one log line.
func TestModelChoiceMadeOnOneReplicaHoldsOnAnother(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cat := testCatalog(t)
	logs := &logbuf.Buffer{}
	ca := models.SharedChoices(a.Table("models"), cat, zerolog.Nop())
	cb := models.SharedChoices(b.Table("models"), cat, zerolog.New(logs))
	const chatKey = "telegram:chat:1"

	if _, ok, err := cb.Get(ctx, chatKey); ok || err != nil {
		t.Fatalf("a chat that never switched: %v %v", ok, err)
	}
	if err := ca.Set(ctx, chatKey, "fast", "telegram:42"); err != nil {
		t.Fatal(err)
	}
	if ch, ok, err := cb.Get(ctx, chatKey); !ok || err != nil || ch.Model != "fast" || ch.By != "telegram:42" {
		t.Fatalf("the other replica reads %+v %v %v; want fast by telegram:42", ch, ok, err)
	}
	if err := cb.Set(ctx, chatKey, "", "telegram:42"); err != nil {
		t.Fatal(err)
	}
	if ch, ok, err := ca.Get(ctx, chatKey); ok || err != nil {
		t.Fatalf("back to the default through b, a still reads %+v (%v)", ch, err)
	}

	if err := ca.Set(ctx, chatKey, "gone", "telegram:42"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ch, ok, err := cb.Get(ctx, chatKey); ok || err != nil {
			t.Fatalf("a choice of an unconfigured model: %+v %v %v; want none", ch, ok, err)
		}
	}
	if n := strings.Count(logs.String(), "no longer configured"); n != 1 {
		t.Errorf("%d log lines about the unconfigured model, want 1:\n%s", n, logs.String())
	}
}

// submissions counts what the schedulers queued.
type submissions struct {
	mu   sync.Mutex
	list []ingress.Submission
}

func (s *submissions) Submit(_ context.Context, sub ingress.Submission) (ingress.Ticket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, sub)
	return ingress.Ticket{}, nil
}

func (s *submissions) all() []ingress.Submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ingress.Submission(nil), s.list...)
}

// noHistory and noPlatforms serve a task of an API chat, which needs
// neither.
type noHistory struct{}

func (noHistory) Recent(context.Context, string, int) ([]chat.ChatLogEntryV1, error) { return nil, nil }
func (noHistory) Scan(context.Context, string, func(chat.ChatLogEntryV1) bool) error {
	return nil
}

type noPlatforms struct{}

func (noPlatforms) Lookup(string) (dispatch.Dispatcher, bool) { return nil, false }

// Two replicas' schedulers both passing at a slot (as while the
// scheduler's lease moves) queue its run once between them, and both list
// how the run ended.
func TestTwoSchedulersTakeEachSlotOnce(t *testing.T) {
	a := startNode(t, "a", nil)
	b := startNode(t, "b", a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Date(2026, 3, 2, 9, 0, 30, 0, time.UTC)
	clock := fakeclock.New(start)
	sub := &submissions{}
	scheduler := func(n *Node) *tasks.Scheduler {
		dir := t.TempDir()
		path := filepath.Join(dir, "report.md")
		err := os.WriteFile(path, []byte("---\ncron: \"* * * * *\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nReport.\n"), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, start.Add(-time.Hour), start.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		s, err := tasks.New(tasks.Options{Dir: dir, Submitter: sub, History: noHistory{}, Dispatchers: noPlatforms{},
			Clock: clock, Records: n.Table("tasks"), Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sa, sb := scheduler(a), scheduler(b)

	const slots = 4
	for i := range slots {
		var wg sync.WaitGroup
		for _, s := range []*tasks.Scheduler{sa, sb} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Tick(ctx) }()
		}
		wg.Wait()
		if got := len(sub.all()); got != i+1 {
			t.Fatalf("after %d slots the two schedulers queued %d runs, want %d", i+1, got, i+1)
		}
		if i < slots-1 {
			clock.Advance(time.Minute)
		}
	}
	seen := map[string]bool{}
	for _, s := range sub.all() {
		if seen[s.ID] {
			t.Fatalf("run %s queued twice", s.ID)
		}
		seen[s.ID] = true
	}

	// The latest run ends; the submitter's scheduler records it, and
	// both list it (a restarted scheduler too: nothing is kept locally).
	last := sub.all()[slots-1]
	last.OnDone(ingress.Outcome{})
	for name, s := range map[string]*tasks.Scheduler{"a": sa, "b": sb, "a restarted": scheduler(a)} {
		list, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].LastRunID != last.ID || list[0].LastStatus != tasks.StatusOK {
			t.Errorf("%s lists %+v; want run %s ok", name, list, last.ID)
		}
	}
	// Neither takes the latest slot again.
	sa.Tick(ctx)
	sb.Tick(ctx)
	if got := len(sub.all()); got != slots {
		t.Errorf("%d runs after passing again at the last slot, want %d", got, slots)
	}
}

// BenchmarkSharedModelChoice is what cluster mode adds to every turn: one
// read of the chat's /model choice from the stream leader (here a
// replica of a one-server JetStream reading through another's connection).
func BenchmarkSharedModelChoice(b *testing.B) {
	na := startNode(b, "a", nil)
	nb := startNode(b, "b", na)
	ctx := context.Background()
	cat, err := models.New(llm.Config{Provider: "offline", Models: map[string]llm.Config{
		"fast": {Provider: "deepseek", Model: "deepseek-chat", APIKey: "sk-deepseek-123"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := models.SharedChoices(na.Table("models"), cat, zerolog.Nop()).Set(ctx, "telegram:chat:1", "fast", "telegram:42"); err != nil {
		b.Fatal(err)
	}
	c := models.SharedChoices(nb.Table("models"), cat, zerolog.Nop())
	b.ResetTimer()
	for b.Loop() {
		if ch, ok, err := c.Get(ctx, "telegram:chat:1"); !ok || err != nil || ch.Model != "fast" {
			b.Fatal(ch, ok, err)
		}
	}
}

// BenchmarkSharedModelChoiceR3 is the same read in a group of three
// routed servers keeping three copies, as cluster mode runs in production:
// the read goes to the stream leader, which may be another server.
func BenchmarkSharedModelChoiceR3(b *testing.B) {
	ports := make([]int, 6)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	nodes := make([]*Node, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		var routes []string
		for j := range nodes {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[2*j+1]))
			}
		}
		opts := Options{Replica: fmt.Sprintf("r%d", i+1), Partitions: 4, Replicas: 3, Logger: zerolog.Nop(),
			Embedded: &Embedded{Listen: fmt.Sprintf("127.0.0.1:%d", ports[2*i]), Cluster: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
				Routes: routes, StoreDir: b.TempDir()}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n, err := Start(ctx, opts)
			if err != nil {
				b.Error(err)
				return
			}
			nodes[i] = n
		}()
	}
	wg.Wait()
	for _, n := range nodes {
		if n != nil {
			b.Cleanup(n.Close)
		}
	}
	if b.Failed() {
		b.FailNow()
	}
	ctx := context.Background()
	cat, err := models.New(llm.Config{Provider: "offline", Models: map[string]llm.Config{
		"fast": {Provider: "deepseek", Model: "deepseek-chat", APIKey: "sk-deepseek-123"},
	}})
	if err != nil {
		b.Fatal(err)
	}
	if err := models.SharedChoices(nodes[0].Table("models"), cat, zerolog.Nop()).Set(ctx, "telegram:chat:1", "fast", "telegram:42"); err != nil {
		b.Fatal(err)
	}
	for i, n := range nodes {
		b.Run(fmt.Sprintf("on-r%d", i+1), func(b *testing.B) {
			c := models.SharedChoices(n.Table("models"), cat, zerolog.Nop())
			for b.Loop() {
				if ch, ok, err := c.Get(ctx, "telegram:chat:1"); !ok || err != nil || ch.Model != "fast" {
					b.Fatal(ch, ok, err)
				}
			}
		})
	}
}
