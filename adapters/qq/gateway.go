package qq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	gws "github.com/gorilla/websocket"
	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/errs"
	"github.com/tencent-connect/botgo/websocket"
	"github.com/tencent-connect/botgo/websocket/client"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// gatewayState is what a reconnect needs to resume, and which connection
// became ready. Guarded by Adapter.mu.
type gatewayState struct {
	sessionID string                  // QQ session to resume; "" → identify
	seq       uint32                  // last seq seen on it
	conns     map[*dto.Session]string // botgo connection → QQ session it carries
	order     []*dto.Session          // connections, oldest first
	ready     *dto.Session            // the connection that last got READY/RESUMED
	// live is true while runGateway runs. A READY or RESUMED that botgo
	// delivers after it returned (the gate took the connection back, or
	// Run stops) must not mark the adapter running again.
	live bool
}

// keepConns is how many past connections keep routing events: a dropped
// connection's last events may still be in botgo's queue.
const keepConns = 2

// runGateway keeps one gateway connection up until ctx ends: botgo's
// websocket client does the protocol (Identify/Resume, heartbeats, parsing);
// this loop reconnects after a drop with backoff, resumes the session when
// it has one, and stops the client when ctx ends. botgo's SessionManager is
// not used: it blocks forever and cannot be stopped. The gate may call it
// again after it returned: it resumes the session it had if QQ still keeps
// it, and identifies afresh otherwise.
func (a *Adapter) runGateway(ctx context.Context) error {
	a.mu.Lock()
	a.gw.live = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.gw.live = false
		a.mu.Unlock()
	}()
	a.status.Set(chat.ChannelQQ, "starting", "connecting to the gateway")
	a.adoptSharedSession(ctx)
	saving, stopSaving := context.WithCancel(ctx)
	saved := make(chan struct{})
	go func() { defer close(saved); a.saveSessions(saving) }()
	defer func() { stopSaving(); <-saved }()
	url := ""
	failures := 0
	for ctx.Err() == nil {
		if url == "" {
			u, err := a.gatewayURL(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.status.Set(chat.ChannelQQ, "reconnecting", err.Error())
				a.log.Warn().Err(err).Msg("getting the qq gateway address failed; retrying")
				adapters.SleepCtx(ctx, a.backoff(failures))
				failures++
				continue
			}
			url = u
		}
		conn, err := a.connectOnce(ctx, url)
		if ctx.Err() != nil {
			return nil
		}
		if a.wasReady(conn) {
			failures = 0
		}
		wait, fatal := a.afterClose(err)
		if fatal != nil {
			return fatal
		}
		if !a.wasReady(conn) {
			url = "" // the address may have changed
		}
		a.status.Set(chat.ChannelQQ, "reconnecting", err.Error())
		if wait {
			a.log.Warn().Err(err).Int("attempt", failures+1).Msg("qq gateway connection lost; reconnecting")
			adapters.SleepCtx(ctx, a.backoff(failures))
			failures++
		} else {
			a.log.Info().Err(err).Msg("qq gateway asked for a reconnect")
		}
	}
	return nil
}

// gatewayURL asks GET /gateway/bot for the websocket address.
func (a *Adapter) gatewayURL(ctx context.Context) (string, error) {
	a.apiMu.Lock()
	ap, err := a.api.WS(ctx, nil, "")
	a.apiMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("qq gateway address: %w", describe(err))
	}
	if ap == nil || ap.URL == "" {
		return "", errors.New("qq gateway address: empty answer")
	}
	return ap.URL, nil
}

// connectOnce runs one connection until it ends or ctx does. It returns the
// connection's session (to ask wasReady) and why it ended.
func (a *Adapter) connectOnce(ctx context.Context, url string) (*dto.Session, error) {
	sid, seq := a.resumePoint()
	cl := (&client.Client{}).New(dto.Session{
		ID: sid, LastSeq: seq, URL: url, TokenSource: a.tokens, Intent: dto.Intent(a.opts.Intents),
		AppID: a.opts.AppID, Shards: dto.ShardConfig{ShardID: 0, ShardCount: 1},
	})
	conn := cl.Session()
	a.track(conn, sid)
	if err := dial(ctx, cl); err != nil {
		return conn, fmt.Errorf("qq gateway connect: %w", err)
	}
	var err error
	if sid != "" {
		err = cl.Resume()
	} else {
		err = cl.Identify()
	}
	if err != nil {
		cl.Close()
		return conn, fmt.Errorf("qq gateway identify: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cl.Listening() }()
	select {
	case err = <-done:
		return conn, fmt.Errorf("qq gateway: %w", err)
	case <-ctx.Done():
		cl.Close() // Listening returns once its reader sees the closed socket
		<-done
		return conn, nil
	}
}

// dial is botgo's Connect, which takes no context, made to give up when ctx
// ends; a connection that succeeds after that is closed at once. The
// goroutine left waiting for Connect is the one an adapter does not hand to
// its Workers on purpose: nothing can cancel botgo's dial, and shutdown must
// not wait out its 45 s handshake timeout. It touches nothing but cl.
func dial(ctx context.Context, cl websocket.WebSocket) error {
	done := make(chan error, 1)
	go func() { done <- cl.Connect() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				cl.Close()
			}
		}()
		return ctx.Err()
	}
}

// closeCode finds the websocket close code in an error botgo returns
// (botgo wraps close errors into text).
var closeCodeRE = regexp.MustCompile(`websocket: close (\d{4})`)

func closeCode(err error) int {
	var ce *gws.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	if m := closeCodeRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// Gateway close codes that no reconnect can fix.
var fatalClose = map[int]string{
	4010: "invalid shard",
	4011: "sharding required",
	4012: "invalid API version",
	4013: "invalid intents",
	4014: "intents not allowed for this bot: check its event permissions or the configured intents",
	4914: "the bot is offline (unlisted)",
	4915: "the bot is banned",
}

// afterClose decides what follows a connection's end: whether to wait
// before reconnecting, or to give up (fatal). It also drops the session
// when QQ will not resume it, and the token when QQ rejected it.
func (a *Adapter) afterClose(err error) (wait bool, fatal error) {
	switch {
	case errors.Is(err, errs.ErrNeedReConnect): // op 7: resume at once
		return false, nil
	case errors.Is(err, errs.ErrInvalidSession): // op 9: identify anew
		a.forgetSession()
		return true, nil
	}
	code := closeCode(err)
	if why, ok := fatalClose[code]; ok {
		return false, fmt.Errorf("qq: the gateway refused the bot (close %d: %s)", code, why)
	}
	switch code {
	case 4004: // authentication failed: the token is stale
		a.tokens.invalidate()
	case 4006, 4007: // session no longer valid, invalid seq
		a.forgetSession()
	}
	return true, nil
}

// track registers a new connection for event routing and forgets old ones.
func (a *Adapter) track(conn *dto.Session, sid string) {
	bindSession(conn, a)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gw.conns == nil {
		a.gw.conns = map[*dto.Session]string{}
	}
	a.gw.conns[conn] = sid
	a.gw.order = append(a.gw.order, conn)
	for len(a.gw.order) > keepConns+1 {
		old := a.gw.order[0]
		a.gw.order = a.gw.order[1:]
		delete(a.gw.conns, old)
		unbindSession(old)
	}
}

func (a *Adapter) resumePoint() (string, uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gw.sessionID, a.gw.seq
}

func (a *Adapter) forgetSession() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gw.sessionID, a.gw.seq = "", 0
}

func (a *Adapter) wasReady(conn *dto.Session) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gw.ready == conn
}

// onReady takes READY: the session to resume later and the bot's own id.
func (a *Adapter) onReady(p *dto.WSPayload, d *dto.WSReadyData) {
	a.mu.Lock()
	a.gw.conns[p.Session] = d.SessionID
	a.gw.sessionID, a.gw.seq, a.gw.ready = d.SessionID, p.Seq, p.Session
	a.botID = d.User.ID
	// Set under mu, so that it comes before runGateway's end or not at all.
	if a.gw.live {
		a.status.Set(chat.ChannelQQ, "running", "gateway session ready")
	}
	a.mu.Unlock()
	a.log.Info().Str("session", d.SessionID).Str("botId", d.User.ID).Str("bot", d.User.Username).
		Msg("qq gateway session ready")
}

// onOther takes dispatches without a handler of their own; RESUMED among
// them says a resume worked.
func (a *Adapter) onOther(p *dto.WSPayload) {
	a.noteSeq(p)
	if p.Type != "RESUMED" {
		return
	}
	a.mu.Lock()
	a.gw.ready = p.Session
	sid := a.gw.sessionID
	if a.gw.live {
		a.status.Set(chat.ChannelQQ, "running", "gateway session resumed")
	}
	a.mu.Unlock()
	a.log.Info().Str("session", sid).Msg("qq gateway session resumed")
}

// noteSeq remembers the highest seq seen on the current session.
func (a *Adapter) noteSeq(p *dto.WSPayload) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sid, ok := a.gw.conns[p.Session]; ok && sid != "" && sid == a.gw.sessionID && p.Seq > a.gw.seq {
		a.gw.seq = p.Seq
	}
}
