// Package feishu connects ship to Feishu and Lark through the open platform:
// one-to-one (p2p) and group chats, threads included, receiving
// im.message.receive_v1 over the websocket long connection or a webhook. It
// uses github.com/larksuite/oapi-sdk-go/v3 for tokens, sends and the
// websocket, with ship's own checks in front where the SDK is too lenient
// (webhook signatures, replays, expired tokens).
package feishu

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Modes of receiving events.
const (
	// ModeWebsocket is the long connection: no public address needed.
	ModeWebsocket = "websocket"
	// ModeWebhook takes Feishu's HTTP calls at WebhookPath.
	ModeWebhook = "webhook"
)

// Open-platform base URLs; the websocket endpoint is served by the same host.
const (
	DomainFeishu = "https://open.feishu.cn"
	DomainLark   = "https://open.larksuite.com"
)

// WebhookPath is where ship's HTTP server takes Feishu's event calls.
const WebhookPath = "/webhook/feishu"

// Options configure the adapter.
type Options struct {
	// AppID and AppSecret are the app's credentials (FEISHU_APP_ID,
	// FEISHU_APP_SECRET); both are required.
	AppID     string
	AppSecret string
	// Domain is the open-platform base URL (FEISHU_DOMAIN): "" or "feishu"
	// → DomainFeishu, "lark" → DomainLark, else the URL itself (a test
	// server).
	Domain string
	// Mode is ModeWebsocket ("" → this) or ModeWebhook.
	Mode string
	// VerificationToken, when set, must match the token of URL
	// verification calls and of every webhook event.
	VerificationToken string
	// EncryptKey decrypts and authenticates webhook calls; required in
	// webhook mode, where without it nothing proves a call came from Feishu.
	EncryptKey string
	// WebhookMaxAge is the clock skew allowed on a webhook call's
	// timestamp: a call from further in the future is refused, and one may
	// be this much older than Feishu's retries go (8 h, see
	// webhookRetryHorizon) before it is refused as a replay. 0 → 5 min.
	WebhookMaxAge time.Duration
	// AllowedChatIDs and AllowedUserIDs, when set, are the only chats
	// (chat_id, oc_…) and senders (open_id, ou_…) served; messages from
	// others are neither answered nor logged.
	AllowedChatIDs []string
	AllowedUserIDs []string
	// BusyNote tells a chat its place in line when its message waits.
	BusyNote bool
	// BusyAfter is how long a message must have waited before the busy note
	// goes out, so short waits stay quiet. 0 → 3 s.
	BusyAfter time.Duration
	// CacheDir keeps the ids of handled events (.ship/.cache/feishu);
	// "" keeps them in memory only.
	CacheDir string
	// Streaming shows a reply while the model writes it: a card updated in
	// place (OpenStream). Off, each reply goes whole.
	Streaming bool
	// FirstCardAfter is how long a reply is written before its first card
	// is sent (0 → StreamInterval; negative: at once). A reply done by
	// then goes out once, as one card, instead of a card sent and at once
	// updated.
	FirstCardAfter time.Duration
	// Limits bound the retries of a send (zero values → defaults).
	Limits Limits
	// Media stores the files messages carry and transcribes voice; nil
	// describes them without downloading.
	Media *adapters.Media
	// Host is ship's core as a platform sees it; required.
	Host adapters.Host
	// HTTPClient for open-platform calls (the websocket bootstrap too);
	// nil → a client with a 30 s timeout.
	HTTPClient *http.Client
	// Meter counts the open-platform calls (ship's metrics); nil counts
	// none.
	Meter adapters.Meter
	// Logger gets the adapter's logs and the SDK's (component=lark-sdk),
	// with secrets scrubbed.
	Logger zerolog.Logger
}

// Adapter is the Feishu/Lark connection.
type Adapter struct {
	opts   Options
	domain string
	cli    *lark.Client
	events *dispatcher.EventDispatcher
	hook   http.HandlerFunc // the SDK's webhook handler, behind ServeHTTP's checks
	sdkLog larkcore.Logger
	log    zerolog.Logger
	status adapters.StatusBox
	seen   *seenEvents
	uuids  replyCounter
	// workers owns the goroutines besides Run (notes, busy timers); intake
	// is the handler tail every event ends in.
	workers *adapters.Workers
	intake  *adapters.Intake
	allowC  *adapters.LiveAllowlist[string]
	allowU  *adapters.LiveAllowlist[string]
	// streaming is Options.Streaming as a configuration reload leaves it
	// (Reconfigure).
	streaming atomic.Bool
	typing    typingBook // typing.go
	// gate, when set, decides when this process holds the websocket
	// (cluster mode).
	gate adapters.Gate

	mu     sync.RWMutex
	botID  string // the bot's open_id, once known
	ready  bool   // botID is set
	closed bool   // Run has returned
}

// FromConfig builds the adapter from ship's configuration.
func FromConfig(cfg config.Config, host adapters.Host, log zerolog.Logger) (*Adapter, error) {
	fc := cfg.Adapters.Feishu
	streaming, err := config.StreamingOn(fc.Streaming)
	if err != nil {
		return nil, fmt.Errorf("feishu: adapters.feishu.streaming: %w", err)
	}
	md, err := adapters.MediaFromConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	return New(Options{
		Media:             md,
		AppID:             fc.AppID,
		AppSecret:         fc.AppSecret,
		Domain:            fc.Domain,
		Mode:              fc.Mode,
		VerificationToken: fc.VerificationToken,
		EncryptKey:        fc.EncryptKey,
		AllowedChatIDs:    fc.AllowedChatIDs,
		AllowedUserIDs:    fc.AllowedUserIDs,
		BusyNote:          fc.BusyNote == nil || *fc.BusyNote,
		Streaming:         streaming,
		CacheDir:          cfg.StatePath(".cache", "feishu"),
		Host:              host,
		Logger:            log,
	})
}

// New checks the options. Nothing is sent over the network until Run.
func New(opts Options) (*Adapter, error) {
	if opts.AppID == "" || opts.AppSecret == "" {
		return nil, errors.New("feishu: no app credentials: set FEISHU_APP_ID and FEISHU_APP_SECRET")
	}
	if opts.Host == nil {
		return nil, errors.New("feishu: Host is required")
	}
	domain, err := resolveDomain(opts.Domain)
	if err != nil {
		return nil, err
	}
	if opts.Mode == "" {
		opts.Mode = ModeWebsocket
	}
	if opts.Mode != ModeWebsocket && opts.Mode != ModeWebhook {
		return nil, fmt.Errorf("feishu: mode %q must be websocket or webhook", opts.Mode)
	}
	if opts.Mode == ModeWebhook && opts.EncryptKey == "" {
		return nil, errors.New("feishu: webhook mode needs an encrypt key (set FEISHU_ENCRYPT_KEY to the Encrypt Key " +
			"of the app's event subscription), or use websocket mode")
	}
	if opts.WebhookMaxAge <= 0 {
		opts.WebhookMaxAge = 5 * time.Minute
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	opts.Limits = opts.Limits.withDefaults()
	seen, err := openSeenEvents(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		opts:   opts,
		domain: domain,
		log:    opts.Logger.With().Str("channel", chat.ChannelFeishu).Logger(),
		seen:   seen,
		allowC: adapters.NewLiveAllowlist(opts.AllowedChatIDs),
		allowU: adapters.NewLiveAllowlist(opts.AllowedUserIDs),
	}
	a.streaming.Store(opts.Streaming)
	a.sdkLog = newSDKLogger(a.log, opts.AppSecret, opts.EncryptKey)
	a.cli = lark.NewClient(opts.AppID, opts.AppSecret, clientOptions(
		lark.WithOpenBaseUrl(domain),
		lark.WithHttpClient(opts.HTTPClient),
		lark.WithLogger(a.sdkLog),
		lark.WithLogLevel(larkcore.LogLevelDebug), // zerolog filters
	)...)
	// A token cached by an earlier adapter of this app in this process
	// (another test, a restart in-process) may belong to another server.
	dropTokens(opts.AppID)

	// The token is checked here only for URL verification by the SDK; the
	// adapter checks events' tokens itself (handle.go).
	a.events = dispatcher.NewEventDispatcher(opts.VerificationToken, opts.EncryptKey)
	a.events.InitConfig(larkevent.WithLogger(a.sdkLog), larkevent.WithLogLevel(larkcore.LogLevelDebug))
	a.events.OnP2MessageReceiveV1(a.onMessage)
	a.events.OnP2CardActionTrigger(a.onCardAction) // buttons.go
	if opts.Mode == ModeWebhook {
		a.hook = httpserverextHandler(a.events)
	}
	a.workers = adapters.NewWorkers()
	a.intake = &adapters.Intake{
		Host: opts.Host, Workers: a.workers, BusyNote: opts.BusyNote, BusyAfter: opts.BusyAfter, Log: a.log,
		// Notes are kept apart from replies in the idempotency uuids.
		Send: func(ctx context.Context, req dispatch.RequestContext, text string) error {
			return a.send(ctx, req, text, kindNote)
		},
	}
	a.status.Set(chat.ChannelFeishu, "starting", "")
	return a, nil
}

func resolveDomain(d string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(d)) {
	case "", "feishu":
		return DomainFeishu, nil
	case "lark", "larksuite":
		return DomainLark, nil
	}
	d = strings.TrimRight(strings.TrimSpace(d), "/")
	if !strings.HasPrefix(d, "https://") && !strings.HasPrefix(d, "http://") {
		return "", fmt.Errorf("feishu: domain %q must be feishu, lark or an http(s) URL (FEISHU_DOMAIN)", d)
	}
	return d, nil
}

// Name is the channel name.
func (a *Adapter) Name() string { return chat.ChannelFeishu }

// Status reports the adapter's state.
func (a *Adapter) Status() adapters.Status { return a.status.Get() }

// GateConnection makes Run hold the websocket only while g lets it; sends
// and the webhook (webhook mode) are not gated. Call it before Run.
func (a *Adapter) GateConnection(g adapters.Gate) { a.gate = g }

// Run learns the bot's open_id, then receives events until ctx ends: over
// the websocket, whenever the gate lets it, or (webhook mode) through
// ServeHTTP while it waits. It keeps serving sends and background work all
// along.
func (a *Adapter) Run(ctx context.Context) error {
	defer a.stop()
	botID, err := a.identify(ctx)
	if err != nil {
		if ctx.Err() != nil {
			a.status.Set(chat.ChannelFeishu, "stopped", "")
			return nil
		}
		a.status.Set(chat.ChannelFeishu, "failed", err.Error())
		return err
	}
	a.mu.Lock()
	a.botID, a.ready = botID, true
	a.mu.Unlock()
	if a.opts.Mode == ModeWebhook {
		a.status.Set(chat.ChannelFeishu, "running", "webhook at "+WebhookPath)
		a.log.Info().Str("path", WebhookPath).Msg("feishu webhook ready")
		<-ctx.Done()
		a.status.Set(chat.ChannelFeishu, "stopped", "")
		return nil
	}
	return a.gate.Hold(ctx, chat.ChannelFeishu, &a.status, a.runWebsocket)
}

// runWebsocket holds the long connection; the SDK reconnects on its own and
// its Start returns when ctx ends. Each call dials afresh, so the gate may
// call it again after it returned.
func (a *Adapter) runWebsocket(ctx context.Context) error {
	a.status.Set(chat.ChannelFeishu, "starting", "connecting the websocket")
	ws := larkws.NewClient(a.opts.AppID, a.opts.AppSecret,
		larkws.WithDomain(a.domain),
		larkws.WithEventHandler(a.events),
		larkws.WithHttpClient(a.opts.HTTPClient),
		larkws.WithLogger(a.sdkLog),
		larkws.WithLogLevel(larkcore.LogLevelDebug),
		larkws.WithOnReady(func() {
			a.status.Set(chat.ChannelFeishu, "running", "websocket connected")
			a.log.Info().Msg("feishu websocket connected")
		}),
		larkws.WithOnReconnecting(func() {
			a.status.Set(chat.ChannelFeishu, "reconnecting", "websocket lost")
			a.log.Warn().Msg("feishu websocket lost; reconnecting")
		}),
		larkws.WithOnReconnected(func() {
			a.status.Set(chat.ChannelFeishu, "running", "websocket reconnected")
			a.log.Info().Msg("feishu websocket reconnected")
		}),
		larkws.WithOnError(func(err error) {
			a.log.Warn().Str("error", a.scrub(err.Error())).Msg("feishu websocket error")
		}),
	)
	err := ws.Start(ctx)
	if ctx.Err() != nil {
		a.status.Set(chat.ChannelFeishu, "stopped", "")
		return nil
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	msg := a.scrub(err.Error())
	var ce *larkws.ClientError
	if errors.As(err, &ce) {
		msg = fmt.Sprintf("%s (check FEISHU_APP_ID, FEISHU_APP_SECRET and that the app subscribes to events by long connection)", msg)
	}
	a.status.Set(chat.ChannelFeishu, "failed", msg)
	return fmt.Errorf("feishu websocket: %s", msg)
}

// identify reads the bot's open_id from /open-apis/bot/v3/info, retrying
// network trouble; refused credentials are final.
func (a *Adapter) identify(ctx context.Context) (string, error) {
	for attempt := 0; ; attempt++ {
		id, name, err := a.botInfo(ctx)
		if err == nil {
			a.log.Info().Str("bot", name).Str("openId", id).Msg("feishu bot identified")
			return id, nil
		}
		var final *finalError
		if errors.As(err, &final) {
			return "", err
		}
		a.status.Set(chat.ChannelFeishu, "reconnecting", err.Error())
		a.log.Warn().Err(err).Msg("feishu bot info failed; retrying")
		if !adapters.SleepCtx(ctx, adapters.Backoff(attempt)) {
			return "", ctx.Err()
		}
	}
}

func (a *Adapter) identity() (string, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.botID, a.ready
}

// stop ends background work (notes, busy timers) when Run returns.
func (a *Adapter) stop() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.workers.Stop()
	if err := a.seen.close(); err != nil {
		a.log.Warn().Err(err).Msg("closing the feishu event log")
	}
}

// scrub removes the app secret and encrypt key from text that may come from
// the SDK or the network.
func (a *Adapter) scrub(s string) string {
	return scrubSecrets(s, a.opts.AppSecret, a.opts.EncryptKey)
}
