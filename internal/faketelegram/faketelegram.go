// Package faketelegram is a loopback fake of the Telegram Bot API.
//
// It serves /bot<token>/<method> and /file/bot<token>/<path> on 127.0.0.1
// with the wire shapes of the real server (form, multipart, query or JSON
// parameters; {"ok":true,"result":...} or {"ok":false,"error_code":...,
// "description":...,"parameters":{...}}), so that an unmodified client such
// as go-telegram-bot-api can be pointed at it with
// NewBotAPIWithClient(token, s.URL()+"/bot%s/%s", client).
//
// Tests play the users with Push (or the builders PrivateText, GroupText,
// TopicText, CallbackQuery) and Press (a user pressing an inline button),
// and read what the bot did with Sent, WaitSent, Message, Edits, Answers,
// WaitAnswered, ChatActions, Drafts and Wait, and how the bot polled with
// PollGaps and PollConflicts. With Options.GroupBudget on it refuses posts
// to a group past Telegram's budget with 429 (GroupCalls records them). getUpdates long-polls like
// the real server: it holds an empty request for up to timeout seconds and
// answers as soon as an update is pushed. It applies allowed_updates when it
// answers, so an update of a type not allowed is dropped whether it was
// pushed before or after the setting (the real server filters updates as
// they arrive, which would make tests depend on timing).
//
// The package does not import "testing": it serves tests and load programs
// alike. All methods are safe for concurrent use.
package faketelegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by WaitSent, WaitPolling, WaitAnswered, Wait and
// DeliverWebhook once the server is closed.
var ErrClosed = errors.New("faketelegram: server closed")

// ErrNotAllowed is returned by DeliverWebhook for an update of a kind the
// bot's allowed_updates leaves out: Telegram would not send it.
var ErrNotAllowed = errors.New("faketelegram: update kind not in allowed_updates")

// Options configures Start.
type Options struct {
	// Token is the bot token; required. Requests with any other token get
	// HTTP 401 {"ok":false,"error_code":401,"description":"Unauthorized"}.
	Token string
	// BotID is the bot's user id (default 1000).
	BotID int64
	// BotUsername is the bot's username without "@" (default "ship_test_bot").
	BotUsername string
	// GroupBudget, when on, refuses sends and edits to a group past its
	// budget with 429 and retry_after, as Telegram does (see Budget).
	GroupBudget Budget
}

// Update is the raw JSON object of one Telegram Update, so that tests can
// send any shape. Push fills "update_id" when it is missing or zero.
type Update = map[string]any

// Sent records one message the bot sent: a successful sendMessage or
// single-file send, or one message of an album (sendMediaGroup).
type Sent struct {
	Method    string            // "sendMessage", "sendPhoto", "sendDocument", "sendMediaGroup", …
	ChatID    int64             // the resolved chat_id
	ThreadID  int64             // message_thread_id, 0 when absent
	ReplyTo   int64             // reply_parameters.message_id or reply_to_message_id, 0 when absent
	Text      string            // text (or caption) exactly as sent, markup included
	ParseMode string            // parse_mode as sent
	Buttons   [][]Button        // the inline keyboard (reply_markup) as sent; nil without one
	MessageID int64             // the message_id the fake assigned
	Params    map[string]string // every parameter as received (do not modify)
	At        time.Time         // when the call was answered
}

// Failure is an error answer injected with FailNext.
type Failure struct {
	Status          int    // HTTP status; default ErrorCode
	ErrorCode       int    // error_code; default Status, else 429 with RetryAfter, 400 with MigrateToChatID, else 500
	Description     string // description; default a text like the real server's for ErrorCode
	RetryAfter      int    // parameters.retry_after when > 0
	MigrateToChatID int64  // parameters.migrate_to_chat_id when != 0
}

// Server is a running fake Bot API server.
type Server struct {
	opts      Options
	ln        net.Listener
	srv       *http.Server
	client    *http.Client // for DeliverWebhook
	served    chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	idle   *sync.Cond // signalled when active drops to zero
	active int        // requests being answered
	closed bool

	nextUpdate int64
	queue      []queued
	allowed    map[string]bool // nil: the default set
	updatesCh  chan struct{}   // closed and replaced when the queue or webhook changes
	poller     *poller         // the getUpdates request being answered, if any
	holding    int             // getUpdates requests held waiting
	holdCh     chan struct{}   // closed and replaced when a request starts holding
	polls      int             // getUpdates requests being answered
	idleSince  time.Time       // when the last one ended (zero before the first)
	gaps       []PollGap       // closed stretches with no getUpdates in flight
	conflicts  int             // getUpdates requests ended by a newer one (409)

	chats  map[int64]*chatState
	sent   []Sent
	sentCh chan struct{} // closed and replaced when a Sent is recorded
	calls  map[string]int
	fails  map[string][]Failure
	always map[string]*standing // by method: FailAlways

	eventCh   chan struct{} // closed and replaced when anything is recorded (see Wait)
	edits     []Edit
	answers   []Answer
	queries   map[string]*query // callback queries delivered or built, by id
	querySeq  int64
	actions   []ChatAction
	drafts    []Draft
	deletions []Deletion
	failed    []Failed
	// groupCalls are the calls charged to group budgets (GroupBudget).
	groupCalls []GroupCall
	asked      []string // allowed_updates as getUpdates or setWebhook last sent it
	askedOK    bool     // whether the client ever sent allowed_updates

	hookURL, hookSecret string
	hookAllowed         []string

	sentFiles []SentFile
	albumSeq  int64
	files     map[string]*fileEntry // by file_id
	byPath    map[string]*fileEntry // by file_path
	fileSeq   int64
}

// Start starts a fake on 127.0.0.1 on a free port.
func Start(opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("faketelegram: Options.Token is required")
	}
	if opts.BotID == 0 {
		opts.BotID = 1000
	}
	if opts.BotUsername == "" {
		opts.BotUsername = "ship_test_bot"
	}
	opts.BotUsername = strings.TrimPrefix(opts.BotUsername, "@")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faketelegram: listen: %w", err)
	}
	s := &Server{
		opts: opts, ln: ln,
		client:     &http.Client{Transport: &http.Transport{}},
		served:     make(chan struct{}),
		done:       make(chan struct{}),
		nextUpdate: 1,
		updatesCh:  make(chan struct{}),
		holdCh:     make(chan struct{}),
		chats:      map[int64]*chatState{},
		sentCh:     make(chan struct{}),
		eventCh:    make(chan struct{}),
		queries:    map[string]*query{},
		calls:      map[string]int{},
		fails:      map[string][]Failure{},
		always:     map[string]*standing{},
		files:      map[string]*fileEntry{},
		byPath:     map[string]*fileEntry{},
	}
	s.idle = sync.NewCond(&s.mu)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the server root, "http://127.0.0.1:PORT". A client uses
// URL()+"/bot%s/%s" as its API endpoint and URL()+"/file/bot%s/%s" for
// downloads.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server: held getUpdates requests are released, open
// connections are closed (idle ones included) and Close returns once no
// request is being answered. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.mu.Unlock()
		_ = s.srv.Close()
		<-s.served
		s.client.CloseIdleConnections()
		s.mu.Lock()
		for s.active > 0 {
			s.idle.Wait()
		}
		s.mu.Unlock()
	})
}

// Mention returns "@" + the bot's username.
func (s *Server) Mention() string { return "@" + s.opts.BotUsername }

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

// WaitPolling returns once a getUpdates request is being held (waiting for
// updates), which tells a test that the client is long-polling.
func (s *Server) WaitPolling(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.holding > 0 {
			s.mu.Unlock()
			return nil
		}
		ch := s.holdCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrClosed
		}
	}
}

// Calls reports how many times method (case-insensitive) was requested,
// whatever the outcome (injected failures and wrong tokens included).
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// FailNext makes the next n calls of method (case-insensitive) fail with f.
// Injected failures are answered before anything else is checked.
func (s *Server) FailNext(method string, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(method)
	for range n {
		s.fails[key] = append(s.fails[key], f)
	}
}

// standing is a failure set with FailAlways: after more calls are
// answered as usual, every call fails with f.
type standing struct {
	after int
	f     Failure
}

// FailAlways makes every call of method (case-insensitive) fail with f,
// after the next `after` calls of it are answered as usual, until
// StopFailing. It plays a chat that no longer takes the bot's messages:
// Telegram answers every sendMessage to a user who blocked the bot with
// {"ok":false,"error_code":403,"description":"Forbidden: bot was blocked
// by the user"} (the error shape of https://core.telegram.org/bots/api#making-requests:
// "ok" false, an integer "error_code" and a human-readable "description").
// Failures queued by FailNext are answered first.
func (s *Server) FailAlways(method string, after int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always[strings.ToLower(method)] = &standing{after: after, f: f}
}

// StopFailing ends what FailAlways started for method.
func (s *Server) StopFailing(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.always, strings.ToLower(method))
}

// Failed is a call answered with a failure injected by FailNext or
// FailAlways.
type Failed struct {
	Method  string // as requested
	Failure Failure
	At      time.Time // when it was answered
}

// Failures returns the calls answered with injected failures, oldest first.
func (s *Server) Failures() []Failed {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failed)
}

// Webhook returns the url and secret_token that setWebhook last set; both
// are "" when no webhook is set.
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hookURL, s.hookSecret
}

// DeliverWebhook POSTs u as JSON to the webhook URL set by setWebhook, with
// the header X-Telegram-Bot-Api-Secret-Token when a secret is set, and
// returns the HTTP status. update_id is assigned as by Push; the update is
// not queued for getUpdates. An update of a kind the webhook's
// allowed_updates leaves out is not sent: the error wraps ErrNotAllowed.
func (s *Server) DeliverWebhook(ctx context.Context, u Update) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	url, secret := s.hookURL, s.hookSecret
	if url == "" {
		s.mu.Unlock()
		return 0, errors.New("faketelegram: DeliverWebhook: no webhook is set")
	}
	q := s.admitLocked(u)
	if !s.allowedLocked(q.kind) {
		s.mu.Unlock()
		return 0, fmt.Errorf("%w: %s", ErrNotAllowed, q.kind)
	}
	raw := q.raw
	s.mu.Unlock()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(raw)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

type fileEntry struct {
	id, unique, path string
	content          []byte
}

// AddFile registers a file: getFile with fileID answers file_path, and
// GET /file/bot<token>/<filePath> serves content.
func (s *Server) AddFile(fileID, filePath string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addFileLocked(fileID, filePath, content)
}

func (s *Server) addFileLocked(fileID, filePath string, content []byte) *fileEntry {
	if old := s.files[fileID]; old != nil {
		delete(s.byPath, old.path)
	}
	f := &fileEntry{id: fileID, unique: "AQAD" + fileID, path: filePath, content: slices.Clone(content)}
	if len(f.unique) > 20 {
		f.unique = f.unique[:20]
	}
	s.files[fileID] = f
	s.byPath[filePath] = f
	return f
}

// FileContent returns the bytes of a file known to the fake: one added with
// AddFile or one the bot uploaded with sendPhoto/sendDocument (whose file_id
// is in the returned Message and in Sent.Params).
func (s *Server) FileContent(fileID string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[fileID]
	if f == nil {
		return nil, false
	}
	return slices.Clone(f.content), true
}

// broadcast closes *ch and replaces it; the caller holds s.mu.
func broadcast(ch *chan struct{}) {
	close(*ch)
	*ch = make(chan struct{})
}

// botUser is the bot as a User object.
func (s *Server) botUser() map[string]any {
	return map[string]any{"id": s.opts.BotID, "is_bot": true, "first_name": "Ship Test Bot",
		"username": s.opts.BotUsername}
}

// mustJSON marshals v, which the package builds itself.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("faketelegram: " + err.Error())
	}
	return b
}
