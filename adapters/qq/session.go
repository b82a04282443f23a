package qq

import (
	"context"
	"encoding/json"
	"time"

	"github.com/shipmyagent/ship/adapters"
)

// sessionKey is the resume point the gateway session is kept under when
// the processes share it (cluster mode), as a savedSession in JSON: the
// layout ship has always stored there, so replicas of different versions
// agree.
const sessionKey = "qq.session"

type savedSession struct {
	ID  string `json:"id"`
	Seq uint32 `json:"seq"`
}

// sessionSaveEvery is how often a changed session is saved. A holder that
// dies loses at most this much progress: its successor resumes a little
// early, and the events QQ replays twice are caught by the dedupe.
const sessionSaveEvery = time.Second

// KeepResumePointsIn makes the adapter resume from, and save its gateway
// session to, p (adapters.Resumer): in cluster mode the replicas share it,
// so the one that takes the gateway over resumes the session, and QQ
// replays what it sent meanwhile, instead of identifying afresh and missing
// it. Call it before Run.
func (a *Adapter) KeepResumePointsIn(p adapters.ResumePoints) { a.sessions = p }

var _ adapters.Resumer = (*Adapter)(nil)

// adoptSharedSession takes the saved session as the one to resume, unless
// this process knows a later point of the same session.
func (a *Adapter) adoptSharedSession(ctx context.Context) {
	if a.sessions == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := a.sessions.Load(lctx, sessionKey)
	var saved savedSession
	if err == nil && b != nil {
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		a.log.Warn().Err(err).Msg("reading the shared qq session; resuming what this process knows")
		return
	}
	id, seq := saved.ID, saved.Seq
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
		b, _ := json.Marshal(savedSession{ID: id, Seq: seq}) // a string and a number: cannot fail
		err := a.sessions.Save(sctx, sessionKey, b)
		cancel()
		if err != nil {
			a.log.Warn().Err(err).Msg("saving the qq session for the next holder of the gateway")
			continue
		}
		savedID, savedSeq = id, seq
	}
}
