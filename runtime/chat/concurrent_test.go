package chat

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	goroutines = 50
	perRoutine = 40
)

// appendConcurrently has goroutines append perRoutine entries each, entry i
// of goroutine g going to keys[i%len(keys)] with Meta g and i.
func appendConcurrently(t *testing.T, s *Store, keys []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perRoutine {
				e := userEntry(keys[i%len(keys)], fmt.Sprintf("g%d-%d", g, i))
				e.Meta = map[string]any{"g": g, "i": i}
				if _, err := s.Append(context.Background(), e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
}

// checkPerGoroutineOrder checks that entries hold each goroutine's entries
// exactly once and in the order it appended them, and returns how many
// there are per goroutine.
func checkPerGoroutineOrder(t *testing.T, key string, entries []ChatLogEntryV1) map[int]int {
	t.Helper()
	last := make(map[int]int)
	count := make(map[int]int)
	for _, e := range entries {
		g, i := int(e.Meta["g"].(float64)), int(e.Meta["i"].(float64))
		if e.Text != fmt.Sprintf("g%d-%d", g, i) {
			t.Fatalf("%s: text %q does not match meta g=%d i=%d", key, e.Text, g, i)
		}
		if prev, seen := last[g]; seen && i <= prev {
			t.Fatalf("%s: goroutine %d entry %d after %d", key, g, i, prev)
		}
		last[g] = i
		count[g]++
	}
	return count
}

func TestConcurrentAppendsToOneChat(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir, Durability: DurabilityAlways})
	appendConcurrently(t, s, []string{topicKey})

	if n := scanLinesOf(t, dir); n != goroutines*perRoutine {
		t.Fatalf("files hold %d valid lines, want %d", n, goroutines*perRoutine)
	}
	all := mustScan(t, s, topicKey)
	if len(all) != goroutines*perRoutine {
		t.Fatalf("Scan returned %d entries, want %d", len(all), goroutines*perRoutine)
	}
	for g, n := range checkPerGoroutineOrder(t, topicKey, all) {
		if n != perRoutine {
			t.Fatalf("goroutine %d has %d entries, want %d", g, n, perRoutine)
		}
	}
}

func TestConcurrentAppendsToManyChats(t *testing.T) {
	for _, d := range []Durability{DurabilityAlways, DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			// Few handles and small segments, so that eviction and rolling
			// happen while other goroutines append.
			s := openTestStore(t, StoreOptions{Dir: dir, Durability: d, MaxOpenFiles: 2, SegmentBytes: 4096})
			keys := []string{"telegram:chat:1", "telegram:chat:2", "feishu:chat:oc_3", "qq:group:4", "api:chat:5"}
			appendConcurrently(t, s, keys)

			if n := scanLinesOf(t, dir); n != goroutines*perRoutine {
				t.Fatalf("files hold %d valid lines, want %d", n, goroutines*perRoutine)
			}
			if archives, _ := filepath.Glob(filepath.Join(dir, "*.000001.jsonl")); len(archives) != len(keys) {
				t.Fatalf("%d chats rolled, want all %d", len(archives), len(keys))
			}
			for _, key := range keys {
				all := mustScan(t, s, key)
				if len(all) != goroutines*perRoutine/len(keys) {
					t.Fatalf("%s: Scan returned %d entries, want %d", key, len(all), goroutines*perRoutine/len(keys))
				}
				for g, n := range checkPerGoroutineOrder(t, key, all) {
					if n != perRoutine/len(keys) {
						t.Fatalf("%s: goroutine %d has %d entries, want %d", key, g, n, perRoutine/len(keys))
					}
				}
				recent := mustRecent(t, s, key, 1000)
				if len(recent) != len(all) {
					t.Fatalf("%s: Recent returned %d entries, Scan %d", key, len(recent), len(all))
				}
			}
		})
	}
}

// TestReadersDuringRolls reads while one writer appends numbered entries
// through many rolls: every read must be a gap-free, duplicate-free run.
func TestReadersDuringRolls(t *testing.T) {
	s := openTestStore(t, StoreOptions{SegmentBytes: 1500})
	const total = 1500
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for i := range total {
			if _, err := s.Append(context.Background(), userEntry(topicKey, fmt.Sprint(i))); err != nil {
				t.Errorf("Append: %v", err)
				return
			}
		}
	})
	checkRun := func(what string, es []ChatLogEntryV1, fromZero bool) {
		for i, e := range es {
			n := mustAtoi(e.Text)
			if (i == 0 && fromZero && n != 0) || (i > 0 && n != mustAtoi(es[i-1].Text)+1) {
				t.Errorf("%s: entry %d is %q after %v", what, i, e.Text, texts(es[max(0, i-3):i]))
				return
			}
		}
	}
	for range 4 {
		wg.Go(func() {
			for !done.Load() {
				recent, err := s.Recent(context.Background(), topicKey, 40)
				if err != nil {
					t.Errorf("Recent: %v", err)
					return
				}
				checkRun("Recent", recent, false)
				var all []ChatLogEntryV1
				err = s.Scan(context.Background(), topicKey, func(e ChatLogEntryV1) bool {
					all = append(all, e)
					return true
				})
				if err != nil {
					t.Errorf("Scan: %v", err)
					return
				}
				checkRun("Scan", all, true)
			}
		})
	}
	wg.Wait()
	if got := mustRecent(t, s, topicKey, total+1); len(got) != total {
		t.Fatalf("Recent after the writer finished returned %d entries, want %d", len(got), total)
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
