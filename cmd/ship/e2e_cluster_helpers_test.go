package main_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/faketelegram"
)

// replica is one member of the test's cluster: a project folder and fixed
// ports, run by one ship process at a time.
type replica struct {
	name          string
	dir           string
	port          int // HTTP (--port)
	client, route int // the embedded NATS server's client and route ports
	runs          []*shipProc
}

// stablePorts returns n distinct loopback ports that were free a moment
// ago, below the kernel's ephemeral range (32768 up): a replica binds the
// same ports again after each kill, and a port from the ephemeral range
// can meanwhile be the local end of some outgoing connection (the other
// replicas redial their routes every second).
func stablePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatal("no free loopback port between 20000 and 32767")
		}
		p := 20000 + rand.Intn(12768)
		if slices.Contains(ports, p) {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	return ports
}

// proc is the replica's current (last started) process.
func (r *replica) proc() *shipProc { return r.runs[len(r.runs)-1] }

// clusterSection is the replica's "cluster" section of ship.json: an
// embedded NATS server routed to every peer, R3.
func (r *replica) clusterSection(peers []*replica) string {
	var routes []string
	for _, p := range peers {
		if p != r {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p.route))
		}
	}
	section := map[string]any{
		"replica":    r.name,
		"partitions": 16,
		"nats": map[string]any{
			"embedded": map[string]any{
				"listen":  fmt.Sprintf("127.0.0.1:%d", r.client),
				"cluster": fmt.Sprintf("127.0.0.1:%d", r.route),
				"routes":  routes,
			},
			"replicas": min(3, len(peers)),
		},
	}
	b, _ := json.Marshal(section) // maps of strings, ints and string slices always encode
	return string(b)
}

// start launches `ship start <dir> --port <port>` without waiting for it:
// replicas of a new cluster only become ready together. Cleanup kills the
// process if it still runs and reports a data race in its output.
func (r *replica) start(t *testing.T, env []string) *shipProc {
	t.Helper()
	// Its output goes into the test's own report (stderrTails, saveLogs).
	p := launchOn(t, fmt.Sprintf("%s (run %d)", r.name, len(r.runs)+1), r.dir, r.port, false, env)
	r.runs = append(r.runs, p)
	return p
}

// kill sends SIGKILL to the current process and waits for it to die.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	p := r.proc()
	if p.hasExited() {
		t.Fatalf("%s (run %d) exited by itself with status %d before it was killed", r.name, len(r.runs), p.cmd.ProcessState.ExitCode())
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL %s: %v", r.name, err)
	}
	p.wait(t)
}

// routeDial starts NATS's log line for a failed dial of a peer's route.
const routeDial = "Error trying to connect to route"

// stderrTails renders the last lines of every run of every replica, for a
// failure report.
func stderrTails(rs []*replica, lines int) string {
	var b strings.Builder
	for _, r := range rs {
		for i, p := range r.runs {
			// The test's own polling of /api/status and /health, and
			// NATS redialling the route of a dead peer every second,
			// would fill the tail.
			all := slices.DeleteFunc(strings.Split(strings.TrimRight(p.stderr.String(), "\n"), "\n"), func(l string) bool {
				return strings.Contains(l, routeDial) || strings.Contains(l, `"message":"http request"`) &&
					(strings.Contains(l, `"path":"/api/status"`) || strings.Contains(l, `"path":"/health"`))
			})
			fmt.Fprintf(&b, "--- %s run %d (%s), last %d of %d stderr lines (status polls and route redials left out) ---\n",
				r.name, i+1, r.dir, min(lines, len(all)), len(all))
			for _, l := range all[max(0, len(all)-lines):] {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// saveLogs writes the stderr of every run of every replica to
// dir/<replica>-run<n>.log.
func saveLogs(t *testing.T, dir string, rs []*replica) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("SHIP_CLUSTER_LOGS: %v", err)
		return
	}
	for _, r := range rs {
		for i, p := range r.runs {
			path := filepath.Join(dir, fmt.Sprintf("%s-run%d.log", r.name, i+1))
			if err := os.WriteFile(path, []byte(p.stderr.String()), 0o644); err != nil {
				t.Errorf("SHIP_CLUSTER_LOGS: %v", err)
			}
		}
	}
	t.Logf("replicas' logs saved in %s", dir)
}

// clusterStatus is /api/status's "cluster" object.
type clusterStatus struct {
	Replica     string          `json:"replica"`
	Partitions  int             `json:"partitions"`
	Waiting     int             `json:"waiting"` // items in the shared queue, running ones included
	Replicas    []replicaStatus `json:"replicas"`
	Connections []struct {
		Name   string `json:"name"`
		Holder string `json:"holder"`
		Since  int64  `json:"since"`
	} `json:"connections"`
}

// replicaStatus is one replica in /api/status's cluster.replicas.
type replicaStatus struct {
	Name        string   `json:"name"`
	Addr        string   `json:"addr"`
	Started     int64    `json:"started"` // unix ms
	Seen        int64    `json:"seen"`    // unix ms
	Running     []string `json:"running"` // chat keys
	Partitions  []int    `json:"partitions"`
	Concurrency int      `json:"concurrency"`
}

// cluster reads GET /api/status's cluster object; ok is false when the
// replica does not answer or has no cluster object yet.
func (p *shipProc) cluster() (st clusterStatus, ok bool) {
	r, err := p.send("GET", "/api/status", "")
	if err != nil || r.status != 200 {
		return st, false
	}
	var body struct {
		Cluster *clusterStatus `json:"cluster"`
	}
	if json.Unmarshal(r.body, &body) != nil || body.Cluster == nil {
		return st, false
	}
	return *body.Cluster, true
}

// startedAfter reports whether st lists every name with a start time not
// before since (unix ms), and nothing else.
func (st clusterStatus) startedAfter(names []string, since map[string]int64) bool {
	if len(st.Replicas) != len(names) {
		return false
	}
	for _, n := range names {
		i := slices.IndexFunc(st.Replicas, func(r replicaStatus) bool { return r.Name == n })
		if i < 0 || st.Replicas[i].Started < since[n] {
			return false
		}
	}
	return true
}

// holder returns the replica that holds connection name ("" when none).
func (st clusterStatus) holder(name string) string {
	for _, c := range st.Connections {
		if c.Name == name {
			return c.Holder
		}
	}
	return ""
}

// running returns how many chats replica name runs.
func (st clusterStatus) running(name string) int {
	for _, r := range st.Replicas {
		if r.Name == name {
			return len(r.Running)
		}
	}
	return 0
}

// waveFeeder pushes the messages of every chat, each chat's in order, in a
// seeded random interleaving cut into waves; a wave is pushed with a
// jittered pause between pushes.
type waveFeeder struct {
	tg     *faketelegram.Server
	rng    *rand.Rand
	order  []int // chat index of each push
	next   []int // messages pushed so far, per chat
	minGap time.Duration
	maxGap time.Duration

	mu   sync.Mutex
	msgs []pushed
}

func newWaveFeeder(tg *faketelegram.Server, seed int64, chats, perChat int, minGap, maxGap time.Duration) *waveFeeder {
	rng := rand.New(rand.NewSource(seed))
	var order []int
	for c := range chats {
		for range perChat {
			order = append(order, c)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return &waveFeeder{tg: tg, rng: rng, order: order, next: make([]int, chats), minGap: minGap, maxGap: maxGap}
}

// push pushes the pushes from..to-1 of the interleaving in the background;
// the channel is closed when the wave is out. Waves must not overlap.
func (f *waveFeeder) push(from, to int) <-chan struct{} {
	gaps := make([]time.Duration, to-from)
	for i := range gaps {
		gaps[i] = f.minGap + time.Duration(f.rng.Int63n(int64(f.maxGap-f.minGap)+1))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, c := range f.order[from:to] {
			time.Sleep(gaps[i]) // pacing the users, not synchronisation
			f.next[c]++
			p := pushed{chat: c + 1, n: f.next[c], text: fmt.Sprintf("c%d m%d", c+1, f.next[c])}
			u := f.tg.PrivateText(int64(p.chat), "u"+strconv.Itoa(p.chat), p.text)
			p.msgID, _ = u["message"].(map[string]any)["message_id"].(int64)
			p.updateID = f.tg.Push(u)
			f.mu.Lock()
			f.msgs = append(f.msgs, p)
			f.mu.Unlock()
		}
	}()
	return done
}

func (f *waveFeeder) pushed() []pushed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

// longestGap is the longest stretch of gaps inside [from, to], clipped to it.
func longestGap(gaps []faketelegram.PollGap, from, to time.Time) time.Duration {
	var longest time.Duration
	for _, g := range gaps {
		a, b := maxTime(g.From, from), minTime(g.To, to)
		longest = max(longest, b.Sub(a))
	}
	return longest
}

// nextPoll is how long after at the first getUpdates request began that
// was not already in flight at at (0 when one began at once or none came).
func nextPoll(gaps []faketelegram.PollGap, at time.Time) time.Duration {
	for _, g := range gaps {
		if !g.To.Before(at) {
			return max(0, g.To.Sub(at))
		}
	}
	return 0
}

// withUpdateIDs adds its Telegram update_id to each message text, so that
// a loss can be matched with the offsets in ship's logs.
func withUpdateIDs(texts []string, msgs []pushed) []string {
	ids := map[string]int64{}
	for _, m := range msgs {
		ids[m.text] = m.updateID
	}
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = fmt.Sprintf("%s (update %d)", t, ids[t])
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// newReplicas makes the n replicas of a test's cluster, named prefix1…n,
// each with its own project folder and fixed ports, configure applied
// (when not nil) and a cluster section routing it to the others. A failed
// test shows their stderr.
func newReplicas(t *testing.T, n int, prefix string, configure func(r *replica)) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	ports := stablePorts(t, 3*n)
	for i := range rs {
		rs[i] = &replica{name: fmt.Sprintf("%s%d", prefix, i+1), dir: initProject(t),
			port: ports[3*i], client: ports[3*i+1], route: ports[3*i+2]}
	}
	for _, r := range rs {
		if configure != nil {
			configure(r)
		}
		setConfig(t, r.dir, "cluster", r.clusterSection(rs))
	}
	// Registered before the processes' own cleanups, so it runs after
	// them: every process has exited and its output is complete.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replicas' stderr:\n%s", stderrTails(rs, 80))
		}
	})
	return rs
}

// replicaNames lists the replicas' names.
func replicaNames(rs []*replica) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.name
	}
	return names
}
