// Package telegram connects ship to Telegram through the Bot API: private
// chats, groups and forum topics, by long polling or webhook. It uses
// github.com/go-telegram-bot-api/telegram-bot-api/v5, calling raw methods
// where that library lacks forum-topic fields.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
)

// Modes of receiving updates.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// WebhookPath is where ship's HTTP server takes Telegram's webhook calls.
const WebhookPath = "/webhook/telegram"

// Options configure the adapter.
type Options struct {
	Token   string
	APIBase string // "" → DefaultAPIBase
	Mode    string // "" → ModePolling
	// WebhookURL is the public base URL (webhook mode); WebhookPath is
	// appended. WebhookSecret "" → a random secret per start.
	WebhookURL    string
	WebhookSecret string
	// RequireMention: in groups answer only when addressed.
	RequireMention bool
	AllowedChatIDs []int64
	AllowedUserIDs []int64
	BusyNote       bool
	// BusyAfter is how long a message must have waited before the busy
	// note goes out, so short waits stay quiet. 0 → 3 s.
	BusyAfter time.Duration
	ParseMode string
	// Streaming shows replies while the model writes them (drafts in
	// private chats, edits elsewhere) and "typing…" while a turn runs.
	Streaming bool
	// StreamInterval is the least time between two updates of a reply
	// being written. 0 → DefaultStreamInterval.
	StreamInterval time.Duration
	// CacheDir keeps the update offset (.ship/.cache/telegram).
	CacheDir string
	// Media stores the files messages carry and transcribes voice; nil
	// describes them without downloading.
	Media       *adapters.Media
	PollTimeout time.Duration // 0 → 25 s
	Limits      Limits
	// Host is ship's core as a platform sees it.
	Host adapters.Host
	// HTTPClient for Bot API calls; nil → a client with a 75 s timeout
	// (longer than a long poll).
	HTTPClient *http.Client
	// Meter counts the Bot API calls (ship's metrics); nil counts none.
	Meter  adapters.Meter
	Logger zerolog.Logger
}

// Adapter is the Telegram connection.
type Adapter struct {
	opts   Options
	api    *api
	log    zerolog.Logger
	status adapters.StatusBox
	sender *sender
	// resume, when set, keeps the update offset instead of CacheDir.
	resume adapters.ResumePoints
	// gate, when set, decides when this process long-polls (cluster mode).
	gate adapters.Gate
	// workers owns the goroutines besides Run (notes, busy timers); intake
	// is the handler tail every update ends in.
	workers *adapters.Workers
	intake  *adapters.Intake
	allowC  *adapters.LiveAllowlist[int64]
	allowU  *adapters.LiveAllowlist[int64]
	// requireMention and streaming are Options' as a configuration
	// reload leaves them (Reconfigure).
	requireMention, streaming atomic.Bool

	mu    sync.RWMutex
	bot   me   // set once getMe answered
	ready bool // bot is set
}

// FromConfig builds the adapter from ship's configuration.
func FromConfig(cfg config.Config, host adapters.Host, log zerolog.Logger) (*Adapter, error) {
	md, err := adapters.MediaFromConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	opts := optionsFrom(cfg)
	opts.Media, opts.Host, opts.Logger = md, host, log
	return New(opts)
}

// optionsFrom reads the options ship's configuration sets (FromConfig adds
// the media, the host and the logger; Reconfigure takes what a running
// adapter can change).
func optionsFrom(cfg config.Config) Options {
	tc := cfg.Adapters.Telegram
	return Options{
		Token:          tc.BotToken,
		APIBase:        tc.APIBase,
		Mode:           tc.Mode,
		WebhookURL:     tc.WebhookURL,
		WebhookSecret:  tc.WebhookSecret,
		RequireMention: tc.RequireMention == nil || *tc.RequireMention,
		AllowedChatIDs: tc.AllowedChatIDs,
		AllowedUserIDs: tc.AllowedUserIDs,
		BusyNote:       tc.BusyNote == nil || *tc.BusyNote,
		ParseMode:      tc.ParseMode,
		Streaming:      tc.Streaming != "off",
		CacheDir:       cfg.StatePath(".cache", "telegram"),
	}
}

// New checks the options. Nothing is sent over the network until Run.
func New(opts Options) (*Adapter, error) {
	if opts.Token == "" {
		return nil, errors.New("telegram: no bot token: set TELEGRAM_BOT_TOKEN")
	}
	if opts.Host == nil {
		return nil, errors.New("telegram: Host is required")
	}
	if opts.APIBase == "" {
		opts.APIBase = DefaultAPIBase
	}
	opts.APIBase = strings.TrimRight(opts.APIBase, "/")
	if opts.Mode == "" {
		opts.Mode = ModePolling
	}
	if opts.Mode != ModePolling && opts.Mode != ModeWebhook {
		return nil, fmt.Errorf("telegram: mode %q must be polling or webhook", opts.Mode)
	}
	if opts.Mode == ModeWebhook && opts.WebhookURL == "" {
		return nil, errors.New("telegram: webhook mode needs TELEGRAM_WEBHOOK_URL")
	}
	if opts.WebhookSecret == "" {
		opts.WebhookSecret = randomSecret()
	}
	if opts.StreamInterval <= 0 {
		opts.StreamInterval = DefaultStreamInterval
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = 25 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: opts.PollTimeout + 50*time.Second}
	}
	a := &Adapter{
		opts:   opts,
		api:    &api{token: opts.Token, base: opts.APIBase, http: opts.HTTPClient, meter: opts.Meter},
		log:    opts.Logger.With().Str("channel", chat.ChannelTelegram).Logger(),
		allowC: adapters.NewLiveAllowlist(opts.AllowedChatIDs),
		allowU: adapters.NewLiveAllowlist(opts.AllowedUserIDs),
	}
	a.requireMention.Store(opts.RequireMention)
	a.streaming.Store(opts.Streaming)
	a.sender = newSender(a.api, opts.Limits, opts.ParseMode, a.log)
	a.workers = adapters.NewWorkers()
	a.intake = &adapters.Intake{
		Host: opts.Host, Send: a.SendText, Workers: a.workers,
		BusyNote: opts.BusyNote, BusyAfter: opts.BusyAfter, Log: a.log,
	}
	a.status.Set(chat.ChannelTelegram, "starting", "")
	return a, nil
}

// Name is the channel name.
func (a *Adapter) Name() string { return chat.ChannelTelegram }

// Status reports the adapter's state.
func (a *Adapter) Status() adapters.Status { return a.status.Get() }

// GateConnection makes Run long-poll only while g lets it; sends and the
// webhook (webhook mode) are not gated. Call it before Run.
func (a *Adapter) GateConnection(g adapters.Gate) { a.gate = g }

// Run learns the bot's identity, then receives updates until ctx ends: by
// long polling, whenever the gate lets it, or through ServeHTTP (webhook
// mode). It keeps serving sends and background work all along.
func (a *Adapter) Run(ctx context.Context) error {
	defer a.workers.Stop()
	bot, err := a.identify(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		a.status.Set(chat.ChannelTelegram, "failed", err.Error())
		return err
	}
	a.mu.Lock()
	a.bot, a.ready = bot, true
	a.mu.Unlock()
	if a.opts.Mode == ModeWebhook {
		return a.runWebhook(ctx)
	}
	return a.gate.Hold(ctx, chat.ChannelTelegram, &a.status, a.poll)
}

// identify calls getMe, retrying network trouble; a rejected token is final.
func (a *Adapter) identify(ctx context.Context) (me, error) {
	for attempt := 0; ; attempt++ {
		u, err := a.api.getMe(ctx)
		if err == nil {
			a.log.Info().Str("bot", "@"+u.UserName).Int64("botId", u.ID).Msg("telegram bot identified")
			return newMe(u.ID, u.UserName), nil
		}
		if te, ok := apiError(err); ok && (te.Code == http.StatusUnauthorized || te.Code == http.StatusNotFound) {
			return me{}, fmt.Errorf("telegram rejected the bot token (%d %s): check TELEGRAM_BOT_TOKEN", te.Code, te.Message)
		}
		a.status.Set(chat.ChannelTelegram, "reconnecting", err.Error())
		a.log.Warn().Err(err).Msg("telegram getMe failed; retrying")
		if !adapters.SleepCtx(ctx, adapters.Backoff(attempt)) {
			return me{}, ctx.Err()
		}
	}
}

func (a *Adapter) identity() (me, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.bot, a.ready
}
