package cluster

import (
	"context"
	"time"
)

// Status is the cluster part of /api/status.
type Status struct {
	Replica     string   `json:"replica"`
	NATS        string   `json:"nats"` // "embedded" or "external"
	Partitions  int      `json:"partitions"`
	Copies      int      `json:"copies"` // JetStream replicas of each stream
	Replicas    []Member `json:"replicas"`
	Connections []Holder `json:"connections"`
	Waiting     uint64   `json:"waiting"` // items in the shared queue, running ones included
	Error       string   `json:"error,omitempty"`
}

// Status reads the live replicas, the connection holders and the queue's
// depth; what cannot be read now is reported in Error.
func (n *Node) Status(ctx context.Context) Status {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := Status{Replica: n.opts.Replica, NATS: "external", Partitions: n.opts.Partitions, Copies: n.opts.Replicas}
	if n.srv != nil {
		st.NATS = "embedded"
	}
	var err error
	if st.Replicas, err = n.Members(ctx); err != nil {
		st.Error = err.Error()
	}
	if st.Connections, err = n.holders(ctx, connLeasePrefix); err != nil {
		st.Error = err.Error()
	}
	if st.Replicas == nil {
		st.Replicas = []Member{}
	}
	if st.Connections == nil {
		st.Connections = []Holder{}
	}
	if info, err := n.queue.Info(ctx); err == nil {
		st.Waiting = info.State.Msgs
	}
	return st
}
