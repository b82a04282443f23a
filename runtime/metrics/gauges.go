package metrics

import "bufio"

// The gauges are read when Prometheus scrapes, from functions the owner of
// each value hands in: a turn pays nothing for them, and they cannot drift
// from what /api/status shows.

// Queue reports the global queue: how many messages wait, how many run,
// and how many may wait at most.
func (s *Set) Queue(stats func() (waiting, running, capacity int)) {
	if s == nil {
		return
	}
	s.gauge("ship_queue_depth", "Messages waiting in the queue for their turn.", func() float64 { w, _, _ := stats(); return float64(w) })
	s.gauge("ship_queue_running", "Turns running now.", func() float64 { _, r, _ := stats(); return float64(r) })
	s.gauge("ship_queue_capacity", "Messages the queue holds at most (queue.capacity); past it messages are refused.", func() float64 { _, _, c := stats(); return float64(c) })
}

// Approvals reports the tool calls waiting for a person's approval.
func (s *Set) Approvals(pending func() int) {
	if s == nil {
		return
	}
	s.gauge("ship_approvals_pending", "Tool calls waiting for a person's /approve or /deny (not yet expired).", func() float64 { return float64(pending()) })
}

// Jobs reports the background jobs running now.
func (s *Set) Jobs(running func() int) {
	if s == nil {
		return
	}
	s.gauge("ship_jobs_running", "Background jobs (exec_shell background, sub-agents) running now.", func() float64 { return float64(running()) })
}

// Partitions reports the cluster's queue partitions this replica holds.
func (s *Set) Partitions(held func() int) {
	if s == nil {
		return
	}
	s.gauge("ship_cluster_partitions_held", "Queue partitions this replica runs (cluster mode).", func() float64 { return float64(held()) })
}

// ServerState is one MCP server's name (from ship.json) and state.
type ServerState struct {
	Name, State string
}

// MCP reports each configured MCP server's state: a series per server
// with value 1 for the state it is in.
func (s *Set) MCP(states func() []ServerState) {
	if s == nil {
		return
	}
	const name = "ship_mcp_server_state"
	labels := []string{"server", "state"}
	s.register(name, func(w *bufio.Writer) {
		writeHeader(w, name, "MCP servers by configured name and state (starting, ready, failed, …): 1 for the state each is in.", "gauge")
		for _, st := range states() {
			writeSample(w, name, labels, []string{s.values.admit("server", st.Name), s.values.admit("state", st.State)}, "", "", 1)
		}
	})
}

// gauge registers a gauge whose value f gives at each scrape.
func (s *Set) gauge(name, help string, f func() float64) {
	s.register(name, func(w *bufio.Writer) {
		writeHeader(w, name, help, "gauge")
		writeSample(w, name, nil, nil, "", "", f())
	})
}
