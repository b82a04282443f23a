package adapters

import "context"

// Status of an adapter that waits for its connection: another ship
// replica holds it (cluster mode). The adapter still sends replies, shows
// typing and takes webhooks; only the single long connection is elsewhere.
const (
	StateStandby  = "standby"
	StandbyDetail = "another replica holds the connection"
)

// Gate decides when this process may hold a platform's single long
// connection: the Telegram long poll, the Feishu websocket, the QQ gateway.
// Everything else an adapter does (sending, typing, token refresh,
// webhooks) runs in every process; only connect waits for the gate.
//
// A Gate calls connect, named by name, only while the connection is this
// process's to hold, with a context that ends when it no longer is; it may
// call connect again after connect returned (another turn of holding it),
// so connect must start afresh each time, resuming from saved state. It
// returns nil when ctx ends, or connect's error when connect gave up on its
// own. In cluster mode ship's gate is a lease in NATS (cluster.Node.Hold);
// a nil Gate, a process on its own, calls connect once, at once.
type Gate func(ctx context.Context, name string, connect func(ctx context.Context) error) error

// Hold runs connect under the gate, keeping status honest while it waits:
// StateStandby until the gate lets connect run (connect then sets its own
// state), and again when the gate took the connection back. A nil gate
// calls connect directly and never shows standby.
func (g Gate) Hold(ctx context.Context, name string, status *StatusBox, connect func(ctx context.Context) error) error {
	if g == nil {
		return connect(ctx)
	}
	status.Set(name, StateStandby, StandbyDetail)
	return g(ctx, name, func(cctx context.Context) error {
		err := connect(cctx)
		// connect returns nil when its context ends: the gate withdrew the
		// connection (or ship stops, and the adapter's Run sets the final
		// state). An error is connect's own, and its state stays.
		if err == nil && ctx.Err() == nil {
			status.Set(name, StateStandby, StandbyDetail)
		}
		return err
	})
}

// ResumePoints keeps the small values a platform's single long connection
// resumes from (Telegram's update offset, QQ's gateway session) where every
// process that may hold the connection reads them: in cluster mode a bucket
// the replicas share, so the one that takes the connection over resumes
// where the last holder stopped instead of starting afresh.
type ResumePoints interface {
	// Load returns the value saved under key, or nil when there is none.
	Load(ctx context.Context, key string) ([]byte, error)
	// Save stores value under key durably, replacing what was there.
	Save(ctx context.Context, key string, value []byte) error
}

// Resumer is an optional capability (found by type assertion, like
// Streamer): a platform whose single long connection resumes from saved
// state. KeepResumePointsIn makes it load and save that state in p instead
// of keeping it in this process; the platform chooses its keys and their
// encoding. Call it before Run.
type Resumer interface {
	KeepResumePointsIn(p ResumePoints)
}
