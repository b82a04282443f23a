package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errNoValue says a key has no value: never written, deleted or purged.
var errNoValue = errors.New("no value")

// kvValue is a key's latest value as the stream's leader holds it.
type kvValue struct {
	data []byte
	rev  uint64
}

// leaderGet reads a KV key's latest value from its stream's leader. The
// buckets are created with direct get (nats.go always sets it), and a
// direct get may be answered by a follower that has not applied the last
// write yet: the NATS KV documentation says such reads are not
// read-your-writes. Run state and shared records must be, so they are
// read with the stream's MSG.GET API, which only the leader answers.
func (n *Node) leaderGet(ctx context.Context, bucket, key string) (kvValue, error) {
	req, _ := json.Marshal(struct {
		LastFor string `json:"last_by_subj"`
	}{"$KV." + bucket + "." + key})
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	m, err := n.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return kvValue{}, fmt.Errorf("reading %s from the leader: %w", bucket, err)
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64 `json:"seq"`
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return kvValue{}, fmt.Errorf("reading %s from the leader: %w", bucket, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return kvValue{}, errNoValue
		}
		return kvValue{}, fmt.Errorf("reading %s from the leader: %w", bucket, resp.Error)
	}
	if resp.Message == nil {
		return kvValue{}, fmt.Errorf("reading %s from the leader: an answer without a message", bucket)
	}
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err == nil && (h.Get("KV-Operation") == "DEL" || h.Get("KV-Operation") == "PURGE") {
			return kvValue{}, errNoValue
		}
	}
	return kvValue{data: resp.Message.Data, rev: resp.Message.Seq}, nil
}
