package chatlog_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

// Two replicas, each with its Store on its own connection, share one chat:
// what one appends, the other's next read shows, though its tail is warm.
func TestStoresSeeEachOthersAppends(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, t.TempDir())
	a := open(t, connect(t, s), chatlog.Options{CacheEntries: 8})
	b := open(t, connect(t, s), chatlog.Options{CacheEntries: 8})
	const key = "telegram:chat:42"
	var want []chat.ChatLogEntryV1
	for i := range 30 {
		writer, reader := a, b
		if i%3 == 2 {
			writer, reader = b, a
		}
		e, err := writer.Append(ctx, entry(key, fmt.Sprintf("turn %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
		got, err := reader.Recent(ctx, key, 8)
		if err != nil {
			t.Fatal(err)
		}
		if last := want[max(0, len(want)-8):]; !reflect.DeepEqual(got, last) {
			t.Fatalf("after append %d the other store's Recent(8) = %v, want %v", i, texts(got), texts(last))
		}
		if st, err := reader.Stats(ctx, key); err != nil || st.Entries != len(want) || st.LastTS != e.TS {
			t.Fatalf("after append %d the other store's Stats = %+v, %v", i, st, err)
		}
	}
	// A burst past what a tail fetches one by one is streamed in.
	for i := range 40 {
		e, err := a.Append(ctx, entry(key, fmt.Sprintf("burst %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	got, err := b.Recent(ctx, key, 8)
	if err != nil {
		t.Fatal(err)
	}
	if last := want[len(want)-8:]; !reflect.DeepEqual(got, last) {
		t.Fatalf("after a burst Recent(8) = %v, want %v", texts(got), texts(last))
	}
	all := scanAll(t, b, key)
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("Scan after the burst: %d entries, want %d", len(all), len(want))
	}
}

// Several writers in two Stores append to the same chats at once: nothing
// is lost or doubled, and each writer's entries stay in its order.
func TestConcurrentAppendsKeepEachWritersOrder(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, t.TempDir())
	stores := []*chatlog.Store{
		open(t, connect(t, s), chatlog.Options{CacheEntries: 16}),
		open(t, connect(t, s), chatlog.Options{CacheEntries: 16}),
	}
	chats := []string{"api:chat:a", "api:chat:b", "api:chat:c"}
	const writersPerStore, perWriter = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*writersPerStore)
	for si, st := range stores {
		for w := range writersPerStore {
			writer := fmt.Sprintf("s%dw%d", si, w)
			wg.Go(func() {
				for i := range perWriter {
					e := entry(chats[i%len(chats)], fmt.Sprintf("%s %d", writer, i))
					e.Meta = map[string]any{"writer": writer, "i": float64(i)}
					var err error
					if i%2 == 0 {
						_, err = st.Append(ctx, e)
					} else {
						var p *chat.Pending
						if _, p, err = st.AppendDeferred(ctx, e); err == nil {
							err = p.Wait()
						}
					}
					if err != nil {
						errs <- err
						return
					}
					// Readers run alongside the writers.
					if _, err := st.Recent(ctx, chats[(i+1)%len(chats)], 10); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, key := range chats {
		all := scanAll(t, stores[0], key)
		total += len(all)
		last := map[string]float64{}
		for _, e := range all {
			writer, i := e.Meta["writer"].(string), e.Meta["i"].(float64)
			if prev, seen := last[writer]; seen && i <= prev {
				t.Fatalf("%s: %s's entry %v after its entry %v", key, writer, i, prev)
			}
			last[writer] = i
		}
		for _, st := range stores {
			got, err := st.Recent(ctx, key, 16)
			if err != nil {
				t.Fatal(err)
			}
			if want := all[len(all)-16:]; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Recent(16) = %v, want %v", key, texts(got), texts(want))
			}
		}
	}
	if want := len(stores) * writersPerStore * perWriter; total != want {
		t.Fatalf("%d entries in the chats, want %d", total, want)
	}
}

func TestDataSurvivesServerRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := startServer(t, dir)
	st := open(t, connect(t, s), chatlog.Options{})
	want := appendN(t, st, "telegram:chat:-100123:topic:7", "before", 25)
	s.Shutdown()
	s.WaitForShutdown()

	s2 := startServer(t, dir)
	st2 := open(t, connect(t, s2), chatlog.Options{})
	got, err := st2.Recent(ctx, "telegram:chat:-100123:topic:7", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart Recent = %v, want %v", texts(got), texts(want))
	}
	more := appendN(t, st2, "telegram:chat:-100123:topic:7", "after", 2)
	if all := scanAll(t, st2, "telegram:chat:-100123:topic:7"); !reflect.DeepEqual(all, append(want, more...)) {
		t.Fatalf("after a restart the chat reads %v", texts(all))
	}
}

// TestChatKeysManyChats: the stream's per-subject state comes in pages; all
// of them must be read.
func TestChatKeysManyChats(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 chats")
	}
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{})
	const n = 10_000
	pending := make([]*chat.Pending, 0, n)
	for i := range n {
		_, p, err := st.AppendDeferred(ctx, entry(fmt.Sprintf("telegram:chat:%d", -1000000-i), "hi"))
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := st.ChatKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != n {
		t.Fatalf("ChatKeys returned %d chats, want %d", len(keys), n)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for i := range n {
		if k := fmt.Sprintf("telegram:chat:%d", -1000000-i); !seen[k] {
			t.Fatalf("ChatKeys misses %s", k)
		}
	}
}

func scanAll(t *testing.T, log chat.Log, key string) []chat.ChatLogEntryV1 {
	t.Helper()
	var out []chat.ChatLogEntryV1
	if err := log.Scan(context.Background(), key, func(e chat.ChatLogEntryV1) bool {
		out = append(out, e)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
