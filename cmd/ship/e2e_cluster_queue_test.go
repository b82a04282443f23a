package main_test

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// Two replicas of the real binary: a turn asked of one replica and run by
// the other answers /api/execute with its replies, and queue.capacity holds
// cluster-wide: with 50 items in the shared queue the 51st is refused with
// 503 QUEUE_FULL and an error event, and nothing of it is logged.
func TestE2EClusterRepliesFromAnyReplicaAndCapacity(t *testing.T) {
	const capacity = 50
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release)
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		if strings.HasPrefix(r.LastUser(), "hold ") && len(r.ToolResults()) == 0 {
			<-hold
		}
		return fakeopenai.EchoChatSend(r)
	})
	env := append(modelEnv(fake), "SHIP_LOG_LEVEL=info")

	rs := newReplicas(t, 2, "q", func(r *replica) {
		setConfig(t, r.dir, "queue", fmt.Sprintf(`{"concurrency": 2, "capacity": %d}`, capacity))
	})
	for _, r := range rs {
		r.start(t, env)
	}
	a, b := rs[0].proc(), rs[1].proc()
	// Both replicas hold their share of the 16 partitions.
	var st clusterStatus
	within(t, clusterReady, "both replicas holding 8 partitions each", func() bool {
		var ok bool
		st, ok = a.cluster()
		if !ok || len(st.Replicas) != 2 {
			return false
		}
		for _, m := range st.Replicas {
			if len(m.Partitions) != 8 {
				return false
			}
		}
		return true
	})
	var onB []int
	for _, m := range st.Replicas {
		if m.Name == "q2" {
			onB = m.Partitions
		}
	}

	// Chats whose partition q2 runs, asked through q1.
	var chats []string
	for i := 0; len(chats) < 3; i++ {
		id := fmt.Sprintf("far%d", i)
		h := fnv.New32a()
		h.Write([]byte("api:chat:" + id))
		if slices.Contains(onB, int(h.Sum32()%16)) {
			chats = append(chats, id)
		}
	}
	for _, id := range chats {
		res, err := a.execute(id, "hello "+id)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || !slices.Equal(res.Replies, []string{"echo: hello " + id}) {
			t.Errorf("chat %s asked through q1, run on q2: success %v, replies %q; want the echo", id, res.Success, res.Replies)
		}
	}

	// Fill the shared queue: 50 held turns over both replicas' doors.
	events := sseLines(t, b)
	results := make(chan error, capacity)
	for i := range capacity {
		p := a
		if i%2 == 1 {
			p = b
		}
		go func() {
			res, err := p.execute(fmt.Sprintf("full%d", i%10), fmt.Sprintf("hold %d", i))
			if err == nil && !slices.Equal(res.Replies, []string{fmt.Sprintf("echo: hold %d", i)}) {
				err = fmt.Errorf("hold %d: replies %q", i, res.Replies)
			}
			results <- err
		}()
	}
	within(t, clusterReady, "the shared queue holding 50 items", func() bool {
		st, ok := b.cluster()
		return ok && st.Waiting == capacity
	})
	r := b.do(t, "POST", "/api/execute", executeBody("full-extra", "one too many"))
	if r.status != http.StatusServiceUnavailable || errorCode(t, r) != "QUEUE_FULL" || r.header.Get("Retry-After") == "" {
		t.Errorf("the 51st item: status %d, Retry-After %q, body %s; want 503 QUEUE_FULL", r.status, r.header.Get("Retry-After"), r.body)
	}
	within(t, hangGuard, "an error event with code QUEUE_FULL on q2's /api/sse", func() bool {
		for _, l := range events() {
			if strings.Contains(l, `"QUEUE_FULL"`) && strings.Contains(l, "full-extra") {
				return true
			}
		}
		return false
	})
	msgs := b.do(t, "GET", "/api/chats/api:chat:full-extra/messages", "")
	if strings.Contains(string(msgs.body), "one too many") {
		t.Errorf("the refused message was logged: %s", msgs.body)
	}

	release()
	for range capacity {
		select {
		case err := <-results:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(2 * clusterReady):
			t.Fatal("hang guard: held turns not answered after their release")
		}
	}
}

// sseLines reads p's /api/sse in the background; the func returns the
// lines read so far.
func sseLines(t *testing.T, p *shipProc) func() []string {
	t.Helper()
	req, err := http.NewRequest("GET", p.url+"/api/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/sse: status %d", resp.StatusCode)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var mu sync.Mutex
	var lines []string
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
}
