// Package fakelark is a loopback fake of the Feishu/Lark open platform, as
// much of it as a chat bot uses.
//
// It serves on 127.0.0.1 with the wire shapes of the real server, so that the
// unmodified oapi-sdk-go clients can be pointed at it
// (lark.WithOpenBaseUrl(s.URL()), larkws.WithDomain(s.URL())):
//
//   - POST /open-apis/auth/v3/tenant_access_token/internal and
//     app_access_token/internal: {"code":0,"tenant_access_token":"t-<n>","expire":7200}
//   - GET /open-apis/bot/v3/info: the bot's open_id and name
//   - POST /open-apis/im/v1/messages?receive_id_type=chat_id and
//     POST /open-apis/im/v1/messages/{message_id}/reply, deduplicated by uuid
//     as the real API does
//   - POST /open-apis/im/v1/images and /open-apis/im/v1/files (multipart
//     uploads with Feishu's size, format and file_type rules, uploads.go);
//     image, file, media and audio messages must name a key they made
//   - interactive messages and their updates are validated as card JSON
//     (validate.go) and drawn as a reader sees them (Sent.Rendered,
//     RenderCard: Markdown rendered, Feishu's tags in effect, buttons)
//   - POST /callback/ws/endpoint and the websocket it names, speaking the
//     protobuf larkws.Frame protocol: event frames out, acks and pings in,
//     pongs out
//
// Every API call needs "Authorization: Bearer <tenant token>" with a token
// the fake issued and has not expired (ExpireTokens, RevokeTokens); other
// calls get code 99991663 (or the code RevokeTokens names) as from the real
// server. Every response is JSON with
// Content-Type application/json, which the SDK requires.
//
// Tests play the users with PushEvent (websocket) or DeliverWebhook and the
// event builders (P2PText, GroupText, Post, Image, Event.InThread), press
// card buttons with PressButton (long connection) or PressButtonWebhook,
// and read what the bot did with Sent, WaitSent, Uploads and Presses.
//
// The package does not import "testing". All methods are safe for
// concurrent use.
package fakelark

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ErrClosed is returned by the waiting methods once the server is closed.
var ErrClosed = errors.New("fakelark: server closed")

// Paths of the send APIs, as FailNext and Calls name them (the reply path
// uses the SDK's own pattern).
const (
	PathCreate = "/open-apis/im/v1/messages"
	PathReply  = "/open-apis/im/v1/messages/:message_id/reply"
	PathToken  = "/open-apis/auth/v3/tenant_access_token/internal"
	PathBot    = "/open-apis/bot/v3/info"
	PathWSConf = "/callback/ws/endpoint"
)

// Feishu error codes the fake answers with.
const (
	CodeMissingToken = 99991661 // no Authorization header
	CodeInvalidToken = 99991663 // unknown or expired tenant token
	// CodeTokenInvalid is the other "invalid access token" answer (Lark's
	// own CLI classes it as an invalid token, like 99991663); RevokeTokens
	// makes the fake answer it.
	CodeTokenInvalid = 99991668
	CodeRateLimit    = 99991400 // request frequency limit (HTTP 429)
	CodeChatRate     = 230020   // too many messages in this chat
	CodeBadSecret    = 10014    // app_id or app_secret wrong
	CodeBadRequest   = 230001   // invalid parameter
	CodeTooLong      = 230025   // message body over 150 KB
)

// MaxBodyBytes is the largest send request body the real API takes.
const MaxBodyBytes = 150 << 10

// Options configures Start.
type Options struct {
	// AppID defaults to "cli_fake_<random>": the SDK caches tokens per
	// process by app id and secret, so servers with the same credentials
	// would hand each other's tokens around.
	AppID     string
	AppSecret string // default "secret-test"
	// VerificationToken goes into every event's header.token.
	VerificationToken string
	BotOpenID         string // default "ou_bot"
	BotName           string // default "ship"
	TenantKey         string // default "tenant-1"
	// PingInterval is sent to websocket clients in ClientConfig, in
	// seconds. 0 → 30 (never 0 on the wire: the SDK would spin).
	PingInterval int
}

// Sent records one message the bot created (a uuid seen before within the
// hour is not recorded again).
type Sent struct {
	Path          string // PathCreate or PathReply
	ChatID        string // the chat the message landed in
	ReceiveIDType string // create: receive_id_type
	ReplyTo       string // reply: the message replied to
	ReplyInThread bool   // reply: reply_in_thread as sent
	ThreadID      string // the thread the message landed in, "" when none
	MsgType       string
	Content       string // the content JSON string as sent
	Text          string // content.text for msg_type "text"; a card's text as a reader reads it (Rendered.Text)
	// Rendered is what a card shows (msg_type "interactive").
	Rendered Rendered
	// Key is the image_key or file_key an image, file, media or audio
	// message carries.
	Key       string
	UUID      string
	MessageID string // the id the fake assigned
	At        time.Time
}

// Ack is a websocket client's answer to an event frame.
type Ack struct {
	Code    int    // the "code" of the response payload (200 = handled)
	Payload []byte // the raw response payload
}

// Failure is an error answer injected with FailNext.
type Failure struct {
	Status int // HTTP status
	Code   int
	Msg    string
	// Lost makes the call succeed (the message is sent and recorded) but
	// answers it with this failure, as when the answer is lost on the way.
	Lost bool
}

// Server is a running fake.
type Server struct {
	opts      Options
	ln        net.Listener
	srv       *http.Server
	client    *http.Client
	upgrader  websocket.Upgrader
	served    chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	closed   bool
	seq      int64
	tokens   map[string]int // issued tenant tokens → 0 while valid, else the code a call with one gets
	issued   int
	sent     []Sent
	sentCh   chan struct{} // closed and replaced when a Sent is recorded
	calls    map[string]int
	fails    map[string][]Failure
	byUUID   map[string]uuidEntry
	messages map[string]msgInfo // known message ids (pushed or sent)
	edits    editState          // updates, deletions, reactions (cards.go, reactions.go)
	res      resources          // the message resource API's files (resources.go)
	uploads  []Upload           // accepted image and file uploads (uploads.go)
	presses  []Press            // button presses delivered (press.go)

	conns   []*wsConn
	connCh  chan struct{} // closed and replaced when a websocket connects
	acks    map[string]chan Ack
	pings   int
	dialled int
}

type uuidEntry struct {
	data map[string]any
	at   time.Time
}

type msgInfo struct {
	chatID, chatType, threadID, rootID string
}

// Start starts a fake on 127.0.0.1 on a free port.
func Start(opts Options) (*Server, error) {
	if opts.AppID == "" {
		opts.AppID = fmt.Sprintf("cli_fake_%016x", rand.Uint64())
	}
	if opts.AppSecret == "" {
		opts.AppSecret = "secret-test"
	}
	if opts.BotOpenID == "" {
		opts.BotOpenID = "ou_bot"
	}
	if opts.BotName == "" {
		opts.BotName = "ship"
	}
	if opts.TenantKey == "" {
		opts.TenantKey = "tenant-1"
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 30
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakelark: listen: %w", err)
	}
	s := &Server{
		opts: opts, ln: ln,
		client:   &http.Client{Transport: &http.Transport{}},
		served:   make(chan struct{}),
		done:     make(chan struct{}),
		tokens:   map[string]int{},
		sentCh:   make(chan struct{}),
		calls:    map[string]int{},
		fails:    map[string][]Failure{},
		byUUID:   map[string]uuidEntry{},
		messages: map[string]msgInfo{},
		connCh:   make(chan struct{}),
		acks:     map[string]chan Ack{},
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the server root, "http://127.0.0.1:PORT": the open-platform
// base URL and the websocket domain alike.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// AppID returns the app id the fake accepts.
func (s *Server) AppID() string { return s.opts.AppID }

// AppSecret returns the app secret the fake accepts.
func (s *Server) AppSecret() string { return s.opts.AppSecret }

// BotOpenID returns the bot's open_id.
func (s *Server) BotOpenID() string { return s.opts.BotOpenID }

// Close stops the server and closes every websocket. It is safe to call
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		conns := slices.Clone(s.conns)
		s.conns = nil
		s.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
		_ = s.srv.Close()
		<-s.served
		s.client.CloseIdleConnections()
	})
}

// Sent returns a copy of every recorded send, oldest first.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// WaitSent returns once at least n sends are recorded. On ctx expiry (or
// Close) it returns what is recorded so far with ctx.Err() (or ErrClosed).
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	for {
		s.mu.Lock()
		if len(s.sent) >= n {
			out := slices.Clone(s.sent)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.sentCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return s.Sent(), ctx.Err()
		case <-s.done:
			return s.Sent(), ErrClosed
		}
	}
}

// Calls reports how many requests reached path (PathCreate, PathReply,
// PathToken, PathBot, PathWSConf), whatever their outcome.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// FailNext makes the next n requests to path (PathCreate, PathReply or
// PathBot) fail with code and msg, before anything else is checked. The
// HTTP status is 429 for the platform-wide rate limit (99991400), else 400,
// as the real server answers.
func (s *Server) FailNext(path string, n int, code int, msg string) {
	status := http.StatusBadRequest
	if code == CodeRateLimit {
		status = http.StatusTooManyRequests
	}
	s.FailNextWith(path, n, Failure{Status: status, Code: code, Msg: msg})
}

// FailNextWith is FailNext with a chosen HTTP status (say 500).
func (s *Server) FailNextWith(path string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails[path] = append(s.fails[path], f)
	}
}

// TokensIssued reports how many tenant access tokens the fake handed out.
func (s *Server) TokensIssued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

// ExpireTokens makes every token issued so far invalid, as when a token
// expires or is revoked: API calls with one get code 99991663 until the
// client fetches a new token.
func (s *Server) ExpireTokens() { s.invalidate(CodeInvalidToken) }

// RevokeTokens makes every token issued so far invalid with code 99991668
// (CodeTokenInvalid) instead: the first API call with one is answered with
// that code, and so is every later one until the client fetches a new
// token. The SDK retries 99991663 by itself but not 99991668.
func (s *Server) RevokeTokens() { s.invalidate(CodeTokenInvalid) }

func (s *Server) invalidate(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.tokens {
		s.tokens[t] = code
	}
}

// Pings reports how many websocket pings the fake answered.
func (s *Server) Pings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pings
}

// Connections reports how many websocket connections were opened.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dialled
}

// nextLocked returns a fresh sequence number; the caller holds s.mu.
func (s *Server) nextLocked() int64 {
	s.seq++
	return s.seq
}

// next returns a fresh sequence number.
func (s *Server) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextLocked()
}

// remember records where a message lives, so that a reply to it lands in
// the right chat and thread.
func (s *Server) remember(messageID string, m msgInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.messages[messageID]; ok && m.threadID == "" {
		m.threadID = old.threadID
	}
	s.messages[messageID] = m
}

// broadcast closes *ch and replaces it; the caller holds s.mu.
func broadcast(ch *chan struct{}) {
	close(*ch)
	*ch = make(chan struct{})
}
