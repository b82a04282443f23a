package qq

import (
	"context"
	"time"
)

// SessionStore keeps the gateway session (its id and the last event
// sequence) outside this process: in cluster mode the replicas share it, so
// the one that takes the gateway over resumes the session, and QQ replays
// what it sent meanwhile, instead of identifying afresh and missing it.
type SessionStore interface {
	LoadSession(ctx context.Context) (id string, seq uint32, err error)
	SaveSession(ctx context.Context, id string, seq uint32) error
}

// sessionSaveEvery is how often a changed session is saved. A holder that
// dies loses at most this much progress: its successor resumes a little
// early, and the events QQ replays twice are caught by the dedupe.
const sessionSaveEvery = time.Second

// KeepSessionIn makes the adapter resume from, and save its session to, s;
// call it before Run.
func (a *Adapter) KeepSessionIn(s SessionStore) { a.sessions = s }

// adoptSharedSession takes the saved session as the one to resume, unless
// this process knows a later point of the same session.
func (a *Adapter) adoptSharedSession(ctx context.Context) {
	if a.sessions == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	id, seq, err := a.sessions.LoadSession(lctx)
	if err != nil {
		a.log.Warn().Err(err).Msg("reading the shared qq session; resuming what this process knows")
		return
	}
	if id == "" {
		return
	}
	a.mu.Lock()
	if id != a.gw.sessionID || seq > a.gw.seq {
		a.gw.sessionID, a.gw.seq = id, seq
	}
	a.mu.Unlock()
}

// saveSessions saves the session whenever it changed, until ctx ends.
func (a *Adapter) saveSessions(ctx context.Context) {
	if a.sessions == nil {
		return
	}
	t := time.NewTicker(sessionSaveEvery)
	defer t.Stop()
	var savedID string
	var savedSeq uint32
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id, seq := a.resumePoint()
		if id == "" || id == savedID && seq == savedSeq {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := a.sessions.SaveSession(sctx, id, seq)
		cancel()
		if err != nil {
			a.log.Warn().Err(err).Msg("saving the qq session for the next holder of the gateway")
			continue
		}
		savedID, savedSeq = id, seq
	}
}
