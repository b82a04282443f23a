// Package qq connects ship to a QQ bot: group @-messages, C2C (one-to-one)
// chats, guild channel @-messages and guild direct messages, received over
// QQ's gateway websocket or its webhook.
//
// It uses github.com/tencent-connect/botgo v0.2.1: its openapi client for
// every REST call, its websocket client for the gateway connection, its
// event parsing and its dto types. botgo's SessionManager cannot be stopped,
// so the connection loop (reconnect, resume, backoff) is ours (gateway.go);
// botgo's package-level state sits behind botgoseam.go; the access token
// comes from our own source (token.go), which refreshes it before it expires
// and can drop it when QQ says it expired.
package qq

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/rs/zerolog"
	"github.com/tencent-connect/botgo"
	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/openapi"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
)

// Modes of receiving events.
const (
	ModeWebsocket = "websocket"
	ModeWebhook   = "webhook"
)

// WebhookPath is where ship's HTTP server takes QQ's webhook calls.
const WebhookPath = "/webhook/qq"

// QQ's official base URLs (botgo's constants in package constant).
const (
	DefaultAPIBase        = "https://api.sgroup.qq.com"
	DefaultSandboxAPIBase = "https://sandbox.api.sgroup.qq.com"
	DefaultTokenBase      = "https://bots.qq.com"
)

// Options configure the adapter.
type Options struct {
	AppID     string
	AppSecret string
	// Sandbox sends API calls to QQ's sandbox environment.
	Sandbox bool
	// APIBase replaces the API base URL ("" → DefaultAPIBase, or
	// DefaultSandboxAPIBase with Sandbox). TokenBase replaces the token
	// endpoint's base URL ("" → DefaultTokenBase).
	APIBase   string
	TokenBase string
	// Mode is ModeWebsocket ("" → the default) or ModeWebhook.
	Mode string
	// WebhookSecret is the secret QQ signs webhook calls with ("" →
	// AppSecret, which is what QQ uses).
	WebhookSecret string
	// Intents is the gateway's intents bit mask (0 → group and C2C
	// messages 1<<25, guild @-messages 1<<30, guild DMs 1<<12). QQ refuses
	// a bot that asks for events it may not receive (close 4014): a bot
	// without guild permissions, say, sets 1<<25.
	Intents int
	// BusyNote tells a chat when its message waits in the queue, once it has
	// waited BusyAfter (0 → 3 s). The note is a passive reply and so uses up
	// one of the message's replies: in groups and C2C chats (5 replies per
	// message) it is sent only while 4 are left for the answer.
	BusyNote  bool
	BusyAfter time.Duration
	// AllowedChatIDs and AllowedUserIDs, when set, are the only chats and
	// authors served; messages from others are neither answered nor
	// logged. A chat is named by its group_openid, channel id, guild id
	// (guild DMs) or, for C2C, the user's user_openid; an author by their
	// id (member_openid in groups, user_openid in C2C).
	AllowedChatIDs []string
	AllowedUserIDs []string
	// ReconnectBackoff is the first wait before reconnecting the gateway or
	// retrying the token endpoint; it doubles up to a minute (0 → 1 s).
	ReconnectBackoff time.Duration
	// MaxAttempts per reply part for 5xx, 429 and network errors (0 → 4);
	// RetryBase is the first wait between them (0 → 1 s).
	MaxAttempts int
	RetryBase   time.Duration
	// HTTPClient fetches access tokens (nil → a client with a 10 s timeout).
	// API calls go through botgo's own client.
	HTTPClient *http.Client
	// Meter counts the bot API calls (ship's metrics); nil counts none.
	Meter adapters.Meter
	// Now is the adapter's clock for QQ's passive-reply windows (nil →
	// time.Now); tests move it on instead of waiting.
	Now func() time.Time
	// Markdown sends replies as QQ markdown messages (msg_type 2), for a
	// bot QQ granted its native Markdown permission; otherwise replies are
	// the model's Markdown rendered as plain text (markdown.Plain). When
	// QQ refuses markdown (code 50056), the reply goes again as plain text
	// and so do all later ones, with one warning in the log.
	Markdown bool
	// Media stores the attachments messages carry and transcribes voice;
	// nil describes them without downloading.
	Media *adapters.Media
	// Host is ship's core as a platform sees it; required.
	Host   adapters.Host
	Logger zerolog.Logger
}

// Adapter is the QQ connection.
type Adapter struct {
	opts    Options
	log     zerolog.Logger
	status  adapters.StatusBox
	tokens  *tokenSource
	replies *ledger                      // per message: when it was sent, its msg_seq and replies
	events  *lru.Cache[string, struct{}] // event ids already handled
	hookKey ed25519.PrivateKey
	hook    *dto.Session // what webhook payloads carry, to route them here

	apiMu sync.Mutex // botgo's openapi client is not safe for concurrent calls
	api   openapi.OpenAPI

	// noMarkdown is set once QQ refused a markdown message: replies go as
	// plain text from then on.
	noMarkdown atomic.Bool

	// gate, when set, decides when this process holds the gateway
	// connection (cluster mode).
	gate adapters.Gate
	// sessions, when set, is where the gateway session is shared with
	// the other replicas (cluster mode).
	sessions adapters.ResumePoints

	// workers owns the goroutines besides Run (notes, busy timers, the
	// token refresher); intake is the handler tail every event ends in.
	workers *adapters.Workers
	intake  *adapters.Intake
	allowC  *adapters.LiveAllowlist[string]
	allowU  *adapters.LiveAllowlist[string]
	// markdown is Options.Markdown as a configuration reload leaves it
	// (Reconfigure).
	markdown atomic.Bool

	mu      sync.Mutex
	runCtx  context.Context // set while Run runs
	started bool            // Run was called: the API domains are set
	botID   string
	gw      gatewayState
}

// FromConfig builds the adapter from ship's configuration.
func FromConfig(cfg config.Config, host adapters.Host, log zerolog.Logger) (*Adapter, error) {
	qc := cfg.Adapters.QQ
	md, err := adapters.MediaFromConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	return New(Options{
		Media:          md,
		AppID:          qc.AppID,
		AppSecret:      qc.AppSecret,
		Sandbox:        qc.Sandbox,
		APIBase:        qc.APIBase,
		TokenBase:      qc.TokenBase,
		Mode:           qc.Mode,
		WebhookSecret:  qc.WebhookSecret,
		Intents:        qc.Intents,
		AllowedChatIDs: qc.AllowedChatIDs,
		AllowedUserIDs: qc.AllowedUserIDs,
		BusyNote:       qc.BusyNote == nil || *qc.BusyNote,
		Markdown:       qc.Markdown,
		Host:           host,
		Logger:         log,
	})
}

// New checks the options. Nothing is sent over the network until Run.
func New(opts Options) (*Adapter, error) {
	if opts.AppID == "" || opts.AppSecret == "" {
		return nil, errors.New("qq: no app credentials: set QQ_APP_ID and QQ_APP_SECRET")
	}
	if opts.Host == nil {
		return nil, errors.New("qq: Host is required")
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeWebsocket
	case ModeWebsocket, ModeWebhook:
	default:
		return nil, fmt.Errorf("qq: mode %q must be websocket or webhook", opts.Mode)
	}
	if opts.APIBase == "" {
		opts.APIBase = DefaultAPIBase
		if opts.Sandbox {
			opts.APIBase = DefaultSandboxAPIBase
		}
	}
	opts.APIBase = strings.TrimRight(opts.APIBase, "/")
	if opts.TokenBase == "" {
		opts.TokenBase = DefaultTokenBase
	}
	opts.TokenBase = strings.TrimRight(opts.TokenBase, "/")
	if opts.WebhookSecret == "" {
		opts.WebhookSecret = opts.AppSecret
	}
	initBotgo()
	if opts.Intents == 0 {
		opts.Intents = int(defaultIntents)
	}
	if opts.ReconnectBackoff <= 0 {
		opts.ReconnectBackoff = time.Second
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 4
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger.With().Str("channel", chat.ChannelQQ).Logger()
	// Re-deliveries concern recent events; older ones are still caught
	// through the ChatStore (Host.Accept).
	events, _ := lru.New[string, struct{}](10_000) // fails only for a size ≤ 0
	a := &Adapter{
		opts:    opts,
		log:     log,
		hookKey: signingKey(opts.WebhookSecret),
		events:  events,
		hook:    &dto.Session{AppID: opts.AppID},
		replies: newLedger(opts.Now),
		allowC:  adapters.NewLiveAllowlist(opts.AllowedChatIDs),
		allowU:  adapters.NewLiveAllowlist(opts.AllowedUserIDs),
	}
	a.markdown.Store(opts.Markdown)
	a.tokens = newTokenSource(opts.AppID, opts.AppSecret, opts.TokenBase, opts.HTTPClient, log, a.backoff)
	// botgo reads the API base from its package variables on every call;
	// Run sets them (sandbox or not, both to opts.APIBase).
	a.api = botgo.NewOpenAPI(opts.AppID, a.tokens).WithTimeout(10 * time.Second)
	a.workers = adapters.NewWorkers()
	a.intake = &adapters.Intake{
		Host: opts.Host, Send: a.SendText, BusySend: a.sendBusyNote, Workers: a.workers,
		BusyNote: opts.BusyNote, BusyAfter: opts.BusyAfter, Log: log,
	}
	a.status.Set(chat.ChannelQQ, "starting", "")
	return a, nil
}

// Name is the channel name.
func (a *Adapter) Name() string { return chat.ChannelQQ }

// Status reports the adapter's state.
func (a *Adapter) Status() adapters.Status { return a.status.Get() }

// GateConnection makes Run hold the gateway connection only while g lets
// it; the access token, sends and the webhook (webhook mode) are not gated.
// Call it before Run.
func (a *Adapter) GateConnection(g adapters.Gate) { a.gate = g }

// Run gets an access token, then receives events until ctx ends: over the
// gateway websocket, whenever the gate lets it, or (webhook mode) through
// ServeHTTP while it waits. It keeps the token fresh and serves sends and
// background work all along.
// It returns nil on ctx's end, and an error only when QQ refuses the bot for
// good (bad credentials, bot banned, intents not allowed).
func (a *Adapter) Run(ctx context.Context) (err error) {
	release, err := acquireBotgo(a, domains{api: a.opts.APIBase, token: a.opts.TokenBase})
	if err != nil {
		a.status.Set(chat.ChannelQQ, "failed", err.Error())
		return err
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.runCtx, a.started = ctx, true
	a.mu.Unlock()
	defer func() {
		cancel()
		a.workers.Stop() // busy notes and the token refresher
		a.tokens.close()
		if err != nil {
			a.status.Set(chat.ChannelQQ, "failed", err.Error())
		} else {
			a.status.Set(chat.ChannelQQ, "stopped", "")
		}
	}()

	if err := a.tokens.first(ctx, func(err error) {
		a.status.Set(chat.ChannelQQ, "reconnecting", err.Error())
	}); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	a.workers.Go(func(wctx context.Context) {
		// Whichever ends first: Run's ctx or the workers'.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(wctx, cancel)
		defer stop()
		a.tokens.refreshLoop(ctx)
	})

	if a.opts.Mode == ModeWebhook {
		a.status.Set(chat.ChannelQQ, "running", "webhook at "+WebhookPath)
		a.log.Info().Str("path", WebhookPath).Msg("qq webhook ready")
		<-ctx.Done()
		return nil
	}
	return a.gate.Hold(ctx, chat.ChannelQQ, &a.status, a.runGateway)
}

// running returns Run's context while Run runs.
func (a *Adapter) running() (context.Context, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runCtx == nil || a.runCtx.Err() != nil {
		return nil, false
	}
	return a.runCtx, true
}

// backoff is the wait before reconnect attempt n (0-based): ReconnectBackoff
// doubling up to a minute, with jitter.
func (a *Adapter) backoff(attempt int) time.Duration {
	return adapters.Jitter(min(a.opts.ReconnectBackoff<<min(attempt, 16), time.Minute))
}
