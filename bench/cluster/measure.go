package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/shipproc"
)

// replicaPorts are one process's ports: HTTP, and its NATS client and
// route ports (cluster setups).
type replicaPorts struct{ http, client, route int }

// measure runs one setup: starts its processes, waits until they are ready
// (and, in a cluster, see each other), warms up, sends the load, waits for
// every turn's task_completed, and stops the processes.
func measure(ctx context.Context, o options, fake *fakeopenai.Server, s setup, root string) (_ result, err error) {
	res := result{setup: s}
	n := max(1, s.replicas)
	ports := make([]replicaPorts, n)
	for i := range ports {
		for _, p := range []*int{&ports[i].http, &ports[i].client, &ports[i].route} {
			if *p, err = shipproc.FreePort(); err != nil {
				return res, err
			}
		}
	}
	env := shipproc.Env("LLM_PROVIDER=openai", "LLM_API_KEY=bench-key", "LLM_MODEL=fake",
		"LLM_BASE_URL="+fake.BaseURL(), "SHIP_LOG_LEVEL=warn")
	var procs []*shipproc.Proc
	defer func() {
		for _, p := range procs {
			p.Kill()
			if err != nil {
				err = fmt.Errorf("%w\n--- %s stderr tail ---\n%s", err, p.Name, p.Stderr())
			}
		}
	}()
	for i := range n {
		name := "single"
		sections := map[string]any{"queue": map[string]any{"concurrency": o.concurrency}}
		if s.replicas > 0 {
			name = fmt.Sprintf("r%d", i+1)
			sections["cluster"] = clusterSection(name, i, ports, o.partitions)
		}
		dir := filepath.Join(root, name)
		if err := shipproc.Init(ctx, o.bin, dir, withSections(sections)); err != nil {
			return res, err
		}
		p, err := shipproc.Launch(ctx, o.bin, name, dir, ports[i].http, env)
		if err != nil {
			return res, err
		}
		procs = append(procs, p)
	}

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.senders}}
	defer client.CloseIdleConnections()
	readyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, p := range procs {
		if err := p.WaitReady(readyCtx, client, pollEvery); err != nil {
			return res, err
		}
	}
	if s.replicas > 0 {
		for _, p := range procs {
			if err := waitReplicas(readyCtx, p, client, n); err != nil {
				return res, err
			}
		}
		if res.partitions, res.held, err = waitSettled(readyCtx, procs[0], client, n); err != nil {
			return res, err
		}
	}

	if o.idle > 0 {
		if res.idleCPU, err = idleCPU(ctx, procs, o.idle); err != nil {
			return res, err
		}
	}

	streamCtx, stopStreams := context.WithCancel(ctx)
	defer stopStreams()
	col := newCollector()
	for _, p := range procs {
		if err := col.follow(streamCtx, p); err != nil {
			return res, err
		}
	}

	if o.warmup > 0 {
		if _, err := sendAll(ctx, client, procs, "warm", n*o.warmup, 1, o.senders); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
		if err := col.wait(ctx, "api:chat:warm", n*o.warmup); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
	}

	calls0 := fake.RequestCount()
	t0 := time.Now()
	sendAt, err := sendAll(ctx, client, procs, "c", o.chats, o.messages, o.senders)
	if err != nil {
		return res, err
	}
	if err := col.wait(ctx, "api:chat:c", o.chats*o.messages); err != nil {
		return res, err
	}
	res.fill(col, "api:chat:c", sendAt, t0)
	res.modelCalls = fake.RequestCount() - calls0
	stopStreams()

	for _, p := range procs {
		p.Terminate()
	}
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Wait())
	}
	procs = nil
	return res, errors.Join(errs...)
}

// clusterSection is ship.json's "cluster" for replica i of len(ports):
// embedded NATS, routed to every other replica when there are several;
// partitions 0 leaves ship's default.
func clusterSection(name string, i int, ports []replicaPorts, partitions int) map[string]any {
	embedded := map[string]any{"listen": fmt.Sprintf("127.0.0.1:%d", ports[i].client)}
	if len(ports) > 1 {
		var routes []string
		for j, p := range ports {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p.route))
			}
		}
		embedded["cluster"] = fmt.Sprintf("127.0.0.1:%d", ports[i].route)
		embedded["routes"] = routes
	}
	section := map[string]any{"replica": name, "nats": map[string]any{"embedded": embedded, "replicas": min(3, len(ports))}}
	if partitions > 0 {
		section["partitions"] = partitions
	}
	return section
}

// sendAll posts messages messages to each of chats chats (chatId
// prefix<k>) through POST /api/send, from senders clients at once. A
// chat's messages are sent one after the other (so their order is
// defined), message i of chat k to process (k*messages+i) mod len(procs).
// It returns when each was accepted, keyed by chat key, with each chat's
// send times in order.
func sendAll(ctx context.Context, client *http.Client, procs []*shipproc.Proc, prefix string, chats, messages, senders int) (map[string][]time.Time, error) {
	work := make(chan int)
	var mu sync.Mutex
	sendAt := map[string][]time.Time{}
	errs := make([]error, senders)
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for k := range work {
				chatID := fmt.Sprintf("%s%d", prefix, k)
				for i := range messages {
					if errs[w] != nil {
						continue // drain
					}
					p := procs[(k*messages+i)%len(procs)]
					at := time.Now()
					if err := send(ctx, client, p.URL, chatID, fmt.Sprintf("%s-%d-%d", prefix, k, i), fmt.Sprintf("%s m%d", chatID, i+1)); err != nil {
						errs[w] = fmt.Errorf("sending to %s: %w", p.Name, err)
						continue
					}
					mu.Lock()
					sendAt["api:chat:"+chatID] = append(sendAt["api:chat:"+chatID], at)
					mu.Unlock()
				}
			}
		})
	}
	for k := range chats {
		work <- k
	}
	close(work)
	wg.Wait()
	return sendAt, errors.Join(errs...)
}

// send posts one message and checks it was accepted ("ok").
func send(ctx context.Context, client *http.Client, url, chatID, userMessageID, text string) error {
	status, raw, err := shipproc.PostJSON(ctx, client, url+"/api/send",
		map[string]string{"userMessageId": userMessageID, "message": text, "chatId": chatID})
	if err != nil {
		return err
	}
	var out struct {
		Status string `json:"status"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.Status != "ok" {
		return fmt.Errorf("status %d: %.200s", status, raw)
	}
	return nil
}

// completion is one task_completed event.
type completion struct {
	at      time.Time     // when the bench read it
	run     time.Duration // its durationMs
	replica string        // its replica field ("" outside a cluster)
}

// collector gathers the task_completed and error events of every process's
// SSE stream, each run once however many streams show it.
type collector struct {
	mu      sync.Mutex
	seen    map[string]bool         // task ids
	done    map[string][]completion // by chat key, in arrival order
	errs    int
	lastErr string
	changed chan struct{} // closed and replaced on every event kept
}

func newCollector() *collector {
	return &collector{seen: map[string]bool{}, done: map[string][]completion{}, changed: make(chan struct{})}
}

// follow opens p's GET /api/sse and reads it in the background until ctx
// ends; it returns once the stream is open.
func (c *collector) follow(ctx context.Context, p *shipproc.Proc) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/sse", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req) // no timeout: the stream lives until ctx ends
	if err != nil {
		return fmt.Errorf("%s: opening /api/sse: %w", p.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("%s: /api/sse answered %d", p.Name, resp.StatusCode)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				c.add(data)
			}
		}
		if err := sc.Err(); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "cluster: %s: reading /api/sse: %v\n", p.Name, err)
		}
	}()
	return nil
}

func (c *collector) add(data string) {
	var e struct {
		Type         string `json:"type"`
		TaskID       string `json:"taskId"`
		ChatKey      string `json:"chatKey"`
		DurationMS   int64  `json:"durationMs"`
		Replica      string `json:"replica"`
		ErrorMessage string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(data), &e) != nil || (e.Type != "task_completed" && e.Type != "error") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := e.Type + " " + e.TaskID
	if e.TaskID == "" || c.seen[key] {
		return
	}
	c.seen[key] = true
	if e.Type == "error" {
		c.errs++
		c.lastErr = e.ErrorMessage
	} else {
		c.done[e.ChatKey] = append(c.done[e.ChatKey], completion{at: time.Now(),
			run: time.Duration(e.DurationMS) * time.Millisecond, replica: e.Replica})
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// wait returns once n runs of chats whose key starts with prefix completed.
func (c *collector) wait(ctx context.Context, prefix string, n int) error {
	for {
		c.mu.Lock()
		got := 0
		for k, cs := range c.done {
			if strings.HasPrefix(k, prefix) {
				got += len(cs)
			}
		}
		ch, errs, lastErr := c.changed, c.errs, c.lastErr
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d turns of %s* completed (%d error events, last %q): %w", got, n, prefix, errs, lastErr, ctx.Err())
		}
	}
}

// idleCPU is the CPU time the processes used together over d while no
// work arrived (leases renewed, heartbeats, consumers' idle traffic),
// per second of d.
func idleCPU(ctx context.Context, procs []*shipproc.Proc, d time.Duration) (time.Duration, error) {
	cpu := func() (time.Duration, error) {
		var sum time.Duration
		for _, p := range procs {
			t, err := p.CPUTime()
			if err != nil {
				return 0, err
			}
			sum += t
		}
		return sum, nil
	}
	before, err := cpu()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-time.After(d): // the window measured, not synchronisation
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	after, err := cpu()
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(after-before) / time.Since(t0).Seconds()), nil
}
