package ingress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/turn"
)

// Job is what the queue carries for one turn: the turn itself, and who
// waits for its outcome.
type Job struct {
	turn.Turn
	// OnDone, when set, is called once with the outcome of the run (the
	// API waits on it); OnStep sees every step of the run (streaming).
	OnDone func(Outcome)
	OnStep func(ctx context.Context, ev turn.Step)
	// Journaled says the job is in the pending-work journal, which the
	// runner then keeps up to date.
	Journaled bool
	// Streamed is what an interrupted attempt of this run left in the
	// chat of a reply being written (journal.Item.Streamed): the run
	// takes those messages over instead of sending new ones.
	Streamed []string
}

// Outcome is how a queued message ended.
type Outcome struct {
	Result turn.Result
	// Err is the run's error, if any (Result.Output then holds one short
	// line fit for the user).
	Err error
	// FallbackSent says the final-output fallback delivered Result.Output.
	FallbackSent bool
}

// Queue is the one global queue of turns.
type Queue = queue.Queue[Job]

// Ticket says where an accepted message stands.
type Ticket struct {
	queue.Ticket
}

// Options configure an Ingress.
type Options struct {
	Store chat.Log
	Queue *Queue
	// Journal, when set, records accepted work durably.
	Journal *journal.Journal
	// Limiter, when set, caps how fast one sender of a chat is answered,
	// whatever the door (see Submission.Unlimited).
	Limiter *UserLimiter
	// Budget, when set, may refuse a message before it is logged as
	// taken (the daily token budgets); its error is the refusal. Messages
	// from ship itself (Submission.Unlimited) are not asked.
	Budget func(ctx context.Context, s Submission) error
	// OnRefused, when set, hears of every message the limit or the queue
	// turned away, so the refusal is visible (the engine publishes an
	// error event) rather than silent.
	OnRefused func(ctx context.Context, s Submission, err error)
	// Observe, when set, sees every message once it is logged, accepted or
	// recorded (the contacts book learns who is where from it).
	Observe func(ctx context.Context, s Submission)
	// Shared, when set, is the cluster's queue: accepted messages go there
	// instead of Queue and Journal, and run on whichever replica owns
	// their chat (cluster mode).
	Shared Shared
	// Claims, when set, makes "seen before" cluster-wide (cluster mode).
	Claims Claims
	Logger zerolog.Logger
}

// ErrInFlight says another replica claimed the message and has not yet
// queued it nor given it back: it may still fail to. The platform must
// deliver it again rather than have it confirmed as a duplicate (a replica
// that died holding the claim loses it once its heartbeat expires).
var ErrInFlight = errors.New("message being taken by another replica; deliver it again")

// Shared is a queue that outlives this process and is shared by the
// replicas of a cluster.
type Shared interface {
	// Submit makes it durable and queued cluster-wide; onDone, when set,
	// hears the run's outcome wherever it ran.
	Submit(ctx context.Context, it journal.Item, onDone func(Outcome)) (queue.Ticket, error)
}

// Claims keeps which platform messages were taken, across replicas.
type Claims interface {
	// Claim reserves key (a chat's message id) for this replica; false
	// when it was taken before, and ErrInFlight when another live replica
	// is taking it right now.
	Claim(ctx context.Context, key string) (bool, error)
	// Taken marks a claimed message as handled for good.
	Taken(ctx context.Context, key string)
	// Drop gives back a claim whose message was not taken.
	Drop(ctx context.Context, key string)
}

// Ingress is the path every message takes: it is logged in the ChatStore
// first, then queued for the one runtime.
type Ingress struct {
	store   chat.Log
	queue   *Queue
	journal *journal.Journal
	limiter *UserLimiter
	observe func(ctx context.Context, s Submission)
	refused func(ctx context.Context, s Submission, err error)
	budget  func(ctx context.Context, s Submission) error
	shared  Shared
	claims  Claims
	log     zerolog.Logger

	// seen holds recently accepted (chatKey, messageId) pairs; older ones
	// are still recognised through the ChatStore (see Submit).
	seen *lru.Cache[string, struct{}]
	boot string // names this process's runs (see nextID)
	n    atomic.Uint64
}

// seenMax bounds the in-memory set of recently accepted messages.
const seenMax = 50_000

// New returns an Ingress; Store and Queue are required.
func New(opts Options) *Ingress {
	seen, _ := lru.New[string, struct{}](seenMax) // fails only for a size ≤ 0
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &Ingress{
		store: opts.Store, queue: opts.Queue, journal: opts.Journal, limiter: opts.Limiter, observe: opts.Observe, log: opts.Logger,
		refused: opts.OnRefused, budget: opts.Budget,
		shared: opts.Shared, claims: opts.Claims,
		seen: seen, boot: hex.EncodeToString(b),
	}
}

// nextID names a run uniquely across restarts: the journal outlives a
// process, and a new process must not reuse an earlier one's ids.
func (in *Ingress) nextID() string {
	return fmt.Sprintf("m-%s-%d", in.boot, in.n.Add(1))
}

// Submission is one message handed to the front door: the platform's
// message as it arrived, and the turn it starts. The door completes the
// turn (its id, chat, text and route come from the message) and hands it
// on whole.
type Submission struct {
	// ID names the run (the requestId in logs); "" picks a new one.
	ID      string
	Channel string
	ChatKey string
	Message IncomingChatMessage
	// Meta is kept in the log entry (platform details).
	Meta map[string]any
	// Turn is the rest of the turn: who it acts for, the request's tools
	// and model, a preset call; Route, when set, is where replies go
	// instead of where the message came from (a scheduled task is logged
	// as channel "scheduler" in its target chat and answered through that
	// chat's platform). Its ID, ChatKey and Text are taken from the
	// submission.
	Turn turn.Turn
	// Prepare, when set, is called once the message is known to be new and
	// to be answered, just before it is logged; what it returns replaces
	// Message.Text, Turn.Files, Transcript and Turn.Answer. Platforms
	// download media and transcribe voice here, so a re-delivery or a
	// rate-limited message never costs a download.
	Prepare func(ctx context.Context, text string) Prepared
	// Transcript says Message.Text is a voice note's transcript
	// (meta.transcript).
	Transcript bool
	// OnDone, when set, is called once with the outcome of the run.
	OnDone func(Outcome)
	// OnStep, when set, sees every step of the run.
	OnStep func(ctx context.Context, ev turn.Step)
	// DeferSync is for channels whose acknowledgement is the answer itself
	// (the HTTP API): the user entry's fsync is left to the reply's, and
	// waited for before OnDone, so a turn costs one fsync instead of two.
	// Platforms that acknowledge on Accept must leave it false.
	DeferSync bool
	// Once says the message may come more than once (a platform's
	// re-delivery, a client's retry with the same id): a message id this
	// chat already received is ErrDuplicate and runs nothing.
	Once bool
	// Unlimited exempts the message from the per-sender limit: it comes
	// from ship itself (a scheduled task, the turn after an approval), not
	// from someone who could flood.
	Unlimited bool
	// KeepRefused logs a message the limit or the queue refused, with the
	// refusal next to it: a platform is acknowledged either way, and the
	// conversation stays complete (a re-delivery is then a duplicate). An
	// API caller is told to retry instead, so its message is not kept and
	// its id not used up.
	KeepRefused bool
}

// turn is the turn s starts: its Turn completed from the message.
func (s Submission) turn() turn.Turn {
	t := s.Turn
	t.ID, t.ChatKey, t.Text, t.Route = s.ID, s.ChatKey, s.Message.Text, s.Request()
	return t
}

// Request is where a reply to s goes.
func (s Submission) Request() turn.Route {
	if s.Turn.Route.Channel != "" {
		return s.Turn.Route
	}
	m := s.Message
	return turn.Route{
		Channel: s.Channel, ChatID: m.ChatID, MessageThreadID: m.MessageThreadID, ThreadID: m.ThreadID,
		ChatKey: s.ChatKey, UserID: m.UserID, ChatType: m.ChatType, Username: m.Username, MessageID: m.MessageID,
	}
}

// Submit is the front door: every message that is to be answered enters
// here, whichever way it came (a platform, /api/execute, /api/send, the
// console, the scheduler, an approval), and meets the same rules in the
// same order: text cut at the length limit, dedupe (when s.Once), the
// per-sender limit (unless s.Unlimited), the queue's room, the log, the
// journal and the queue. Sources differ only in what their Submission
// says. When Submit returns nil the message is durable (in the journal, or
// in the ChatStore when there is none), so a platform may be acknowledged.
// A refusal is visible: a *RateLimitedError or a queue error (see
// RefusalCode), an OnRefused call, and the refusal logged next to the
// message when s.KeepRefused.
//
// Crash recovery and cluster take-over (Resume, Run) enter after these
// steps: their messages passed them before, and are in the log and the
// journal already.
func (in *Ingress) Submit(ctx context.Context, s Submission) (Ticket, error) {
	// Text can be longer than any sensible prompt: cut it, and say so to
	// the model, rather than refuse it.
	if text, cut := LimitText(s.Message.Text, MaxMessageChars); cut {
		s.Message.Text = text
		in.log.Warn().Str("chatKey", s.ChatKey).Str("messageId", s.Message.MessageID).Msg("message cut at the length limit")
	}
	if s.Once {
		return in.acceptOnce(ctx, s)
	}
	return in.accept(ctx, s)
}

// accept is the door after the dedupe: limit, room, log, queue.
func (in *Ingress) accept(ctx context.Context, s Submission) (Ticket, error) {
	if s.ID == "" {
		s.ID = in.nextID()
	}
	if err := in.admit(ctx, s); err != nil {
		return Ticket{}, in.refuse(ctx, s, err)
	}
	s.prepare(ctx)
	return in.enqueue(ctx, s, true)
}

// Prepared is what Submission.Prepare hands back.
type Prepared struct {
	// Text is what the model sees and the log keeps: the message with its
	// media described, or a voice note's transcript.
	Text string
	// Files are the files stored for the message.
	Files []turn.File
	// Transcript says Text is (or starts with) a transcript.
	Transcript bool
	// Answer, when set, is the whole reply, sent instead of running the
	// model: a voice note that could not be transcribed and nothing else
	// to answer gets a plain "I could not transcribe it" instead of a
	// model's guess at an empty message.
	Answer string
}

// prepare runs Prepare, once.
func (s *Submission) prepare(ctx context.Context) {
	if s.Prepare == nil {
		return
	}
	p := s.Prepare(ctx, s.Message.Text)
	s.Prepare = nil
	// A transcript can be longer than any typed message: the same cut.
	text, _ := LimitText(p.Text, MaxMessageChars)
	s.Message.Text, s.Turn.Files, s.Transcript, s.Turn.Answer = text, p.Files, p.Transcript, p.Answer
}

// enqueue journals and queues s, first logging it as a user entry when
// logUser (a crash leftover already has its entry).
func (in *Ingress) enqueue(ctx context.Context, s Submission, logUser bool) (Ticket, error) {
	if s.ID == "" {
		s.ID = in.nextID()
	}
	if in.shared != nil {
		return in.submit(ctx, s, logUser)
	}
	journaled := in.journal != nil && !s.DeferSync
	var pending *chat.Pending
	if logUser {
		e, err := userEntry(s)
		if err != nil {
			return Ticket{}, err
		}
		if s.DeferSync || journaled {
			_, pending, err = in.store.AppendDeferred(ctx, e)
		} else {
			_, err = in.store.Append(ctx, e)
		}
		if err != nil {
			return Ticket{}, fmt.Errorf("recording message: %w", err)
		}
	}
	t := s.turn()
	req := t.Route
	if journaled {
		// The journal record is what makes the message durable (recovery
		// restores a lost log entry from it): one fsync, not two.
		if pending != nil {
			pending.Release()
			pending = nil
		}
		if err := in.journal.Add(journal.Item{Turn: t}); err != nil {
			return Ticket{}, fmt.Errorf("recording message: %w", err)
		}
	}
	onDone := s.OnDone
	if pending != nil {
		onDone = func(o Outcome) {
			if err := pending.Wait(); err != nil {
				in.log.Error().Err(err).Str("chatKey", s.ChatKey).Msg("syncing user message")
				if o.Err == nil {
					o.Err = fmt.Errorf("syncing user message: %w", err)
				}
			}
			if s.OnDone != nil {
				s.OnDone(o)
			}
		}
	}
	tk, err := in.queue.Enqueue(queue.Item[Job]{ID: t.ID, ChatKey: t.ChatKey, Value: Job{
		Turn: t, OnDone: onDone, OnStep: s.OnStep, Journaled: journaled,
	}})
	if err != nil {
		if pending != nil {
			_ = pending.Wait() // the refusal below is fsynced anyway
		}
		if journaled {
			_ = in.journal.Done(s.ID)
		}
		in.logRefusal(ctx, req, err)
		in.notifyRefused(ctx, s, err)
		return Ticket{}, fmt.Errorf("queueing message: %w", err)
	}
	if in.observe != nil && logUser {
		in.observe(ctx, s)
	}
	return Ticket{Ticket: tk}, nil
}

// logRefusal leaves a system entry next to a message the queue refused, so
// the log says why it was not answered (and a re-delivery is not run).
func (in *Ingress) logRefusal(ctx context.Context, req turn.Route, err error) {
	if _, lerr := in.store.Append(ctx, chat.ChatLogEntryV1{
		Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey, MessageID: req.MessageID,
		Role: chat.RoleSystem, Text: "not answered: " + err.Error(),
	}); lerr != nil {
		in.log.Error().Err(lerr).Str("chatKey", req.ChatKey).Msg("logging refused message")
	}
}

// Record logs a message as a user entry without queueing it: unaddressed
// group messages are kept so chat_load_history sees the whole conversation.
func (in *Ingress) Record(ctx context.Context, s Submission) error {
	e, err := userEntry(s)
	if err != nil {
		return err
	}
	if _, err := in.store.Append(ctx, e); err != nil {
		return fmt.Errorf("recording message: %w", err)
	}
	if in.observe != nil {
		in.observe(ctx, s)
	}
	return nil
}

func userEntry(s Submission) (chat.ChatLogEntryV1, error) {
	if s.ChatKey == "" {
		return chat.ChatLogEntryV1{}, fmt.Errorf("recording message: %w", chat.ErrInvalidChatKey)
	}
	m := s.Message
	return chat.ChatLogEntryV1{
		Channel:   s.Channel,
		ChatID:    m.ChatID,
		ChatKey:   s.ChatKey,
		UserID:    m.UserID,
		MessageID: m.MessageID,
		Role:      chat.RoleUser,
		Text:      m.Text,
		Meta:      withMediaMeta(withPlatformMeta(s.Meta, m), s.Turn.Files, s.Transcript),
	}, nil
}

// withMediaMeta references the message's files (meta.files: kind, path
// relative to the project, mime, bytes, name) and marks a transcript
// (meta.transcript); the log never holds a file's bytes.
func withMediaMeta(meta map[string]any, files []turn.File, transcript bool) map[string]any {
	if len(files) == 0 && !transcript {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	if len(files) > 0 {
		meta["files"] = files
	}
	if transcript {
		meta["transcript"] = true
	}
	return meta
}

func withPlatformMeta(meta map[string]any, m IncomingChatMessage) map[string]any {
	out := make(map[string]any, len(meta)+3)
	for k, v := range meta {
		out[k] = v
	}
	if m.ChatType != "" {
		out["chatType"] = m.ChatType
	}
	if m.MessageThreadID != 0 {
		out["messageThreadId"] = m.MessageThreadID
	}
	if m.ThreadID != "" {
		out["threadId"] = m.ThreadID
	}
	if m.Username != "" {
		out["username"] = m.Username
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// IsBusy reports whether err means the queue cannot take the message now.
func IsBusy(err error) bool {
	return errors.Is(err, queue.ErrQueueFull) || errors.Is(err, queue.ErrQueueStopped)
}

// IsStopped reports whether err means ship is stopping: the message was
// not taken (by Submit), or was taken but will not run in this process
// (an Outcome's Err). Callers of the door answer it without knowing the
// queue.
func IsStopped(err error) bool { return errors.Is(err, queue.ErrQueueStopped) }
