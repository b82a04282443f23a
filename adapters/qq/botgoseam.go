package qq

import (
	"errors"
	"fmt"
	"sync"

	"github.com/tencent-connect/botgo"
	"github.com/tencent-connect/botgo/constant"
	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/event"
)

// This file is the one seam between the adapter and botgo's package-level
// state. botgo v0.2.1 keeps, per process:
//
//   - the event handlers (event.DefaultHandlers, set by RegisterHandlers);
//   - the base URLs (constant.APIDomain, constant.SandBoxAPIDomain,
//     constant.TokenDomain), read on every request;
//   - its logger (log.DefaultLogger).
//
// Nothing else in this package touches them. How they are handled:
//
//   - initBotgo (from New, once per process) installs a silent logger and
//     handlers that route each event to the adapter owning the connection it
//     arrived on, looked up by the *dto.Session botgo puts in every payload.
//     An event of a connection whose adapter has stopped goes nowhere, so
//     one adapter's late events never reach another.
//   - acquireBotgo (from Run) sets the base URLs. Adapters may run side by
//     side only with the same URLs; a second one with other URLs is refused.
//     So tests that point adapters at different fakes must run one after
//     another (no t.Parallel) and stop each adapter and its engine (no send
//     in flight) before the next starts: this package's tests do exactly
//     that, and in production one process runs one QQ bot.
var seam struct {
	once     sync.Once
	mu       sync.Mutex
	running  map[*Adapter]bool
	urls     domains
	sessions map[*dto.Session]*Adapter
}

// domains are the base URLs botgo reads from package constant.
type domains struct {
	api, token string
}

// defaultIntents are what the registered handlers ask the gateway for:
// group and C2C messages, guild @-messages, guild DMs.
var defaultIntents dto.Intent

// errNoAdapter means an event came in on a connection no running adapter
// owns (it was stopped): the event is not taken.
var errNoAdapter = errors.New("qq: event for an adapter that is not running")

// initBotgo installs the logger and the event handlers, once per process.
func initBotgo() {
	seam.once.Do(func() {
		// botgo logs the Identify payload (with the access token) and whole
		// request bodies at Info, and formats its *dto.Session while other
		// goroutines of its own write it: a silent logger avoids both. What
		// matters is logged by this package.
		botgo.SetLogger(quietLogger{})
		seam.running = map[*Adapter]bool{}
		seam.sessions = map[*dto.Session]*Adapter{}
		defaultIntents = event.RegisterHandlers(
			event.ReadyHandler(func(p *dto.WSPayload, d *dto.WSReadyData) {
				if a := adapterFor(p.Session); a != nil {
					a.onReady(p, d)
				}
			}),
			// RESUMED and event types without a handler of their own.
			event.PlainEventHandler(func(p *dto.WSPayload, _ []byte) error {
				if a := adapterFor(p.Session); a != nil {
					a.onOther(p)
				}
				return nil
			}),
			event.GroupATMessageEventHandler(func(p *dto.WSPayload, d *dto.WSGroupATMessageData) error {
				return deliver(p, kindGroup, (*dto.Message)(d))
			}),
			event.C2CMessageEventHandler(func(p *dto.WSPayload, d *dto.WSC2CMessageData) error {
				return deliver(p, kindC2C, (*dto.Message)(d))
			}),
			event.ATMessageEventHandler(func(p *dto.WSPayload, d *dto.WSATMessageData) error {
				return deliver(p, kindChannel, (*dto.Message)(d))
			}),
			event.DirectMessageEventHandler(func(p *dto.WSPayload, d *dto.WSDirectMessageData) error {
				return deliver(p, kindDM, (*dto.Message)(d))
			}),
		)
	})
}

func deliver(p *dto.WSPayload, kind string, m *dto.Message) error {
	a := adapterFor(p.Session)
	if a == nil {
		return errNoAdapter
	}
	return a.onMessage(p, kind, m)
}

// acquireBotgo marks a as running and points botgo at its URLs. The returned
// release undoes it and forgets a's connections.
func acquireBotgo(a *Adapter, d domains) (release func(), err error) {
	seam.mu.Lock()
	defer seam.mu.Unlock()
	if seam.running[a] {
		return nil, errors.New("qq: the adapter is already running")
	}
	if len(seam.running) > 0 && seam.urls != d {
		return nil, fmt.Errorf("qq: another QQ adapter runs in this process with other base URLs (%s, %s); "+
			"botgo keeps them per process", seam.urls.api, seam.urls.token)
	}
	if len(seam.running) == 0 {
		// Written only while no adapter runs: a running one reads them
		// unlocked inside botgo (and they already hold d).
		seam.urls = d
		constant.APIDomain = d.api
		constant.SandBoxAPIDomain = d.api
		constant.TokenDomain = d.token // unused: tokens come from token.go
	}
	seam.running[a] = true
	seam.sessions[a.hook] = a
	return func() {
		seam.mu.Lock()
		defer seam.mu.Unlock()
		delete(seam.running, a)
		for s, owner := range seam.sessions {
			if owner == a {
				delete(seam.sessions, s)
			}
		}
	}, nil
}

// bindSession routes events of the connection that carries s to a.
func bindSession(s *dto.Session, a *Adapter) {
	seam.mu.Lock()
	defer seam.mu.Unlock()
	if seam.running[a] {
		seam.sessions[s] = a
	}
}

// unbindSession forgets an old connection.
func unbindSession(s *dto.Session) {
	seam.mu.Lock()
	defer seam.mu.Unlock()
	delete(seam.sessions, s)
}

func adapterFor(s *dto.Session) *Adapter {
	if s == nil {
		return nil
	}
	seam.mu.Lock()
	defer seam.mu.Unlock()
	return seam.sessions[s]
}

// quietLogger drops botgo's log lines without formatting them.
type quietLogger struct{}

func (quietLogger) Debug(...interface{})          {}
func (quietLogger) Info(...interface{})           {}
func (quietLogger) Warn(...interface{})           {}
func (quietLogger) Error(...interface{})          {}
func (quietLogger) Debugf(string, ...interface{}) {}
func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Warnf(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Sync() error                   { return nil }
