// Package fakeqq is a loopback fake of the QQ bot open platform.
//
// It serves, on 127.0.0.1, what an unmodified client such as
// github.com/tencent-connect/botgo needs: the token endpoint
// (POST /app/getAppAccessToken, expires_in as a JSON string), GET
// /gateway/bot, the gateway websocket (Hello, Identify → READY, Resume →
// RESUMED with the missed events replayed, heartbeats answered, dispatches
// with increasing seq and an event id) and the message endpoints of guild
// channels, guild DMs, groups and C2C chats, with rich media uploads for
// groups and C2C chats and msg_type 7 media messages, multipart file_image
// messages in guild channels and DMs, and markdown messages (msg_type 2)
// for a bot granted the permission (Options.Markdown); files.go cites QQ's
// documents for each rule. Every REST call must carry
// "Authorization: QQBot <token>" with a token the fake issued and that has not
// expired, or it gets 401 with QQ's error body. Replies are checked as QQ
// checks them (rules.go): a msg_id the fake never sent is refused with
// 40034024, a repeated (msg_id, msg_seq) with 40054005, a group reply more
// than 5 minutes and a C2C reply more than 60 minutes after the user's
// message with 40034005, a sixth reply to one group or C2C message with
// 40034128, and text with a link or anything that looks like a domain
// ("example.com", "1.sh", "crawler.py") with 40054010 in groups and C2C
// chats and 304003 in guild channels and DMs.
//
// Reply windows run on the fake's clock: Options.Now, moved on with Advance,
// so tests need not wait. Tokens expire on the wall clock.
//
// Tests play the users with the Push* methods (or build events with GroupAt,
// C2C, ChannelAt and Direct and hand them to Push or DeliverWebhook), break
// things with DropConnection, Redeliver and FailNext, move time on with
// Advance, and read what the bot did with Sent and WaitSent (and what the
// fake refused by QQ's rules with Rejected).
//
// The package does not import "testing": it serves tests and load programs
// alike. All methods are safe for concurrent use.
package fakeqq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ErrClosed is returned by the Wait methods once the server is closed.
var ErrClosed = errors.New("fakeqq: server closed")

// QQ error codes the fake answers with.
const (
	CodeAuthInvalid  = 11241    // Authorization missing or not "QQBot …"
	CodeTokenExpired = 11244    // token unknown or expired
	CodeMsgIDExpired = 40034005 // msg_id outside the passive-reply window
	CodeMsgIDInvalid = 40034024 // msg_id unknown
	CodeReplyLimit   = 40034128 // passive-reply time or count exceeded: sent for the 6th reply
	CodeDuplicateSeq = 40054005 // (msg_id, msg_seq) already used
	CodeURLRefused   = 40054010 // groups and C2C: "消息发送失败, 不允许发送url …"
	CodeGuildURL     = 304003   // guild channels and DMs: "url not allowed"
	CodeBadAppSecret = 100016   // token endpoint: wrong appId or clientSecret
)

// QQ's passive-reply rules for groups and C2C chats (bot.q.qq.com, "发送消息"):
// a reply must come within the window after the user's message, and one
// message takes at most MaxReplies replies. Guild channels and DMs have
// neither rule here.
const (
	GroupReplyWindow = 5 * time.Minute
	C2CReplyWindow   = 60 * time.Minute
	MaxReplies       = 5
)

const (
	tokenRenewWindow  = 60 * time.Second // QQ issues a new token only this close to expiry
	defaultBotID      = "10001"
	defaultBotName    = "ship-test-bot"
	defaultHeartbeat  = 41250 * time.Millisecond
	defaultTokenLife  = 7200 * time.Second
	defaultFailStatus = http.StatusBadRequest
	gatewayPath       = "/websocket"
	writeWait         = 5 * time.Second
	traceHeader       = "X-Tps-trace-ID"
	maxRequestBody    = 1 << 20
)

// Options configures Start.
type Options struct {
	// AppID and AppSecret are what the token endpoint accepts; both required.
	AppID     string
	AppSecret string
	// BotID and BotUsername are the bot's user in READY and in mentions
	// (defaults "10001", "ship-test-bot").
	BotID       string
	BotUsername string
	// TokenLifetime is expires_in of each access token, in whole seconds
	// (default 2 h). Like QQ, the endpoint hands out the current token again
	// until it is within 60 s of expiring; a short lifetime forces refreshes.
	TokenLifetime time.Duration
	// HeartbeatInterval is sent in Hello (default 41.25 s, as QQ does).
	HeartbeatInterval time.Duration
	// Now is the fake's clock for message timestamps and reply windows (nil
	// → time.Now); Advance moves it on.
	Now func() time.Time
	// Markdown grants the bot QQ's native Markdown permission: without it,
	// markdown messages are refused with CodeMarkdownRefused (files.go).
	Markdown bool
}

// Sent records one message the bot posted successfully.
type Sent struct {
	Path    string // the request path, e.g. /v2/groups/G1/messages
	Kind    string // "group", "c2c", "channel" or "dm"
	Target  string // group_openid, user openid, channel_id or DM guild_id
	Content string
	MsgID   string // msg_id: the message replied to ("" for an active message)
	MsgSeq  int    // msg_seq, 0 when absent
	MsgType int    // msg_type, -1 when absent
	// Markdown is markdown.content of a markdown message (msg_type 2, or a
	// channel message's markdown field).
	Markdown string
	// Media is the file a rich media message (msg_type 7) carried, by its
	// file_info; Image the image of a channel or DM message (file_image).
	Media *Upload
	Image []byte
	ID    string // the id the fake gave the new message
	At    time.Time
}

// Rejected records one message the fake refused by QQ's rules (not an
// injected failure).
type Rejected struct {
	Path    string
	Content string
	MsgID   string
	MsgSeq  int
	Status  int // HTTP status
	Code    int // QQ's code
}

// Failure is an error answer injected with FailNext.
type Failure struct {
	Status  int    // HTTP status
	Code    int    // QQ's code in the body
	Message string // QQ's message in the body
}

// Server is a running fake.
type Server struct {
	opts     Options
	ln       net.Listener
	srv      *http.Server
	client   *http.Client // for DeliverWebhook
	upgrader websocket.Upgrader
	done     chan struct{}
	once     sync.Once

	mu      sync.Mutex
	closed  bool
	changed chan struct{} // closed and replaced whenever a counter below moves
	ids     int           // for message, event, token and session ids

	// REST
	tokens     map[string]time.Time // issued token → expiry
	current    string               // the token handed out last
	tokenCalls int
	calls      map[string]int
	fails      map[string][]Failure
	sent       []Sent
	rejected   []Rejected
	replied    map[string]bool     // msg_id + "\x00" + msg_seq already used
	known      map[string]knownMsg // message ids the fake sent to the bot
	replies    map[string]int      // replies accepted per msg_id
	skew       time.Duration       // added to Options.Now by Advance
	media      mediaFiles          // attachment files (media.go)
	uploads    []Upload            // rich media uploads (files.go)
	fileInfos  map[string]Upload   // by file_info

	// gateway
	conns      map[*wsConn]bool // open connections
	live       *wsConn          // the identified or resumed connection
	sessions   map[string]*session
	events     map[string]Event // by event id
	pending    []Event          // pushed while no connection was live
	identified int              // READYs sent
	resumed    int              // RESUMEDs sent
	heartbeats int
	intents    int // of the last Identify
}

// Start starts a fake on 127.0.0.1 on a free port.
func Start(opts Options) (*Server, error) {
	if opts.AppID == "" || opts.AppSecret == "" {
		return nil, errors.New("fakeqq: Options.AppID and AppSecret are required")
	}
	if opts.BotID == "" {
		opts.BotID = defaultBotID
	}
	if opts.BotUsername == "" {
		opts.BotUsername = defaultBotName
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = defaultTokenLife
	}
	opts.TokenLifetime = max(opts.TokenLifetime.Round(time.Second), time.Second)
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = defaultHeartbeat
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakeqq: listen: %w", err)
	}
	s := &Server{
		opts:      opts,
		ln:        ln,
		client:    &http.Client{Transport: &http.Transport{}},
		done:      make(chan struct{}),
		changed:   make(chan struct{}),
		tokens:    map[string]time.Time{},
		calls:     map[string]int{},
		fails:     map[string][]Failure{},
		replied:   map[string]bool{},
		known:     map[string]knownMsg{},
		replies:   map[string]int{},
		conns:     map[*wsConn]bool{},
		sessions:  map[string]*session{},
		events:    map[string]Event{},
		fileInfos: map[string]Upload{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the base URL of both the API and the token endpoint
// ("http://127.0.0.1:port"): QQ_API_BASE and QQ_TOKEN_BASE.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// BotID is the bot's user id (READY's user.id, the id in <@!id> mentions).
func (s *Server) BotID() string { return s.opts.BotID }

// Close stops the server and closes every websocket abruptly.
func (s *Server) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		conns := make([]*wsConn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.live = nil
		s.broadcastLocked()
		s.mu.Unlock()
		close(s.done)
		for _, c := range conns {
			_ = c.ws.Close()
		}
		_ = s.srv.Close()
		s.client.CloseIdleConnections()
	})
}

// Sent returns a copy of every message posted so far, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// WaitSent waits until at least n messages were posted and returns them.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	err := s.wait(ctx, func() bool { return len(s.sent) >= n })
	return s.Sent(), err
}

// Calls is how many requests reached path (rejected ones included).
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// TokenCalls is how many times the token endpoint answered with a token.
func (s *Server) TokenCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls
}

// WaitTokenCalls waits until the token endpoint has handed out a token n
// times in all.
func (s *Server) WaitTokenCalls(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.tokenCalls >= n })
}

// FailNext makes the next n requests to path (after the Authorization check)
// fail with the HTTP status and QQ's {"code":code,"message":message} body.
// Examples: FailNext(GroupPath(g), 1, 400, CodeMsgIDExpired, "msg_id expired")
// or FailNext(C2CPath(u), 1, 401, CodeTokenExpired, "token expired").
func (s *Server) FailNext(path string, n, httpStatus, code int, message string) {
	if httpStatus == 0 {
		httpStatus = defaultFailStatus
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails[path] = append(s.fails[path], Failure{Status: httpStatus, Code: code, Message: message})
	}
}

// GroupPath is the endpoint of replies in a group.
func GroupPath(groupOpenID string) string { return "/v2/groups/" + groupOpenID + "/messages" }

// C2CPath is the endpoint of replies in a C2C (one-to-one) chat.
func C2CPath(userOpenID string) string { return "/v2/users/" + userOpenID + "/messages" }

// ChannelPath is the endpoint of messages in a guild channel.
func ChannelPath(channelID string) string { return "/channels/" + channelID + "/messages" }

// DMPath is the endpoint of messages in a guild direct-message session.
func DMPath(guildID string) string { return "/dms/" + guildID + "/messages" }

// TokenPath is the token endpoint (served on the same host as the API).
const TokenPath = "/app/getAppAccessToken"

// GatewayBotPath is the endpoint that names the gateway websocket.
const GatewayBotPath = "/gateway/bot"

func (s *Server) gatewayURL() string { return "ws://" + s.ln.Addr().String() + gatewayPath }

func (s *Server) nextIDLocked() int {
	s.ids++
	return s.ids
}

// wait blocks until cond (called with s.mu held) holds, ctx ends or the
// server closes.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, closed, ch := cond(), s.closed, s.changed
		s.mu.Unlock()
		switch {
		case ok:
			return nil
		case closed:
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// broadcastLocked wakes every waiter.
func (s *Server) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
