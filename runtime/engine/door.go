package engine

import (
	"context"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/queue"
)

// Door is what a channel that is not a platform (the HTTP API, the web
// console) may do to ship's core: the same kind of narrow contract a
// platform gets (adapters.Host), so the API is one more way in and never
// goes around the rules the platforms meet. The Engine implements it.
type Door interface {
	// Submit takes a message through the front door
	// (ingress.Ingress.Submit): every source meets the same steps in the
	// same order, and differs only in what its Submission says.
	Submit(ctx context.Context, s ingress.Submission) (ingress.Ticket, error)
	// Subscribe follows the run events that pass filter (nil: all), with
	// a buffer of buf; after > 0 replays the retained events after that
	// id first, and complete is false when the replay window no longer
	// reaches back that far (events.Bus.Subscribe).
	Subscribe(filter func(events.Event) bool, after uint64, buf int) (sub *events.Subscription, complete bool)
	// Register makes d the dispatcher of channel, as the binary does for
	// each platform: the api channel's replies go through it.
	Register(channel string, d dispatch.Dispatcher)
	// Decide approves or denies the approval code as by, with the rules,
	// announcements and audit entries of /approve and /deny in a chat
	// (which take this same call). A refusal is a *RefusalError saying
	// why nothing happened; ErrApprovalsOff when ship keeps no approvals.
	Decide(ctx context.Context, code string, approve bool, by Decider) error
	// Answer takes choice (from 1) as by's answer to the question id that
	// the ask tool asked, with the rules of a button press in the chat
	// (which takes this same path): once, from the person asked (or,
	// when the question says so, anyone in its chat), before it expires.
	// The answer becomes a new turn in the question's chat. reply says
	// what happened in the words a chat gets; a refusal is a
	// *RefusalError, ErrQuestionsOff when ship keeps no questions.
	Answer(ctx context.Context, id string, choice int, by questions.Answerer) (reply string, err error)
	// CancelJob stops a running background job of chatKey ("" for any
	// chat: the console) on behalf of by, as /cancel in a chat does; the
	// chat is told. ErrJobsOff without jobs; ErrJobUnknown,
	// ErrJobNotRunning when there is nothing to stop.
	CancelJob(chatKey, id, by string) (Job, error)
	// JobsCommand answers /jobs and /cancel ID sent into an api chat by
	// the caller whose token proves identity, with a platform chat's rules
	// and words; ok is false for another command.
	JobsCommand(name, args, chatKey, identity string) (reply string, ok bool)
}

// View is what the HTTP API and the console may read of ship's core:
// read-only answers, never a component to call into, so what they show
// cannot change what the core does. The Engine implements it.
type View interface {
	// QueueStats is the global queue's state now (GET /api/status).
	QueueStats() queue.Stats
	// ChatKeys lists every chat that has a log.
	ChatKeys(ctx context.Context) ([]string, error)
	// ChatStats is a chat's message count and last activity.
	ChatStats(ctx context.Context, chatKey string) (chat.ChatStats, error)
	// Recent is a chat's last n log entries, oldest first.
	Recent(ctx context.Context, chatKey string, n int) ([]chat.ChatLogEntryV1, error)
	// Search is a chat's newest log entries that contain keyword, at most
	// limit, newest first (the ChatStore's search).
	Search(ctx context.Context, chatKey, keyword string, limit int) ([]chat.ChatLogEntryV1, error)
	// Tools reports each tool and the policy in force for user in
	// chatKey (both optional), judging command for the tools that take
	// one.
	Tools(chatKey, user, command string) ToolsReport
	// Sandbox is the state of the sandbox that exec_shell runs commands
	// in; ok is false when no tool runs commands in one. The state is the
	// tool's own value (see Sandboxed), to be shown as JSON.
	Sandbox() (state any, ok bool)
	// Pending lists the approvals waiting in chatKey ("" for every
	// chat); enabled is false when ship keeps no approvals.
	Pending(chatKey string) (list []policy.Approval, enabled bool)
	// Approvers are the tool-policy roles whose members may approve.
	Approvers() []string
	// RoleMayApprove says whether members of role may approve.
	RoleMayApprove(role string) bool
	// Models are the configured models (GET /api/models, llmConfig).
	Models() *models.Catalog
	// ChatModel is the model chatKey uses now (its /model choice or the
	// default).
	ChatModel(ctx context.Context, chatKey string) models.Model
	// Questions lists the questions of chatKey that still take answers,
	// newest first.
	Questions(ctx context.Context, chatKey string) ([]dispatch.Question, error)
	// Usage is a day's token usage ("" for today, UTC) with its top chats
	// and people; ok is false when ship counts no tokens.
	Usage(ctx context.Context, day string) (r UsageReport, ok bool)
	// Jobs lists the background jobs of chatKey ("" for all), newest
	// first; nil without jobs.
	Jobs(chatKey string) []Job
}

// The Engine is both: the binary hands it to the server as each.
var (
	_ Door = (*Engine)(nil)
	_ View = (*Engine)(nil)
)

// Submit is the front door (ingress.Ingress.Submit) for every source that
// is not a platform; platforms use Accept.
func (e *Engine) Submit(ctx context.Context, s ingress.Submission) (ingress.Ticket, error) {
	e.takeNumberedAnswer(&s)
	return e.ingress.Submit(ctx, s)
}

// Subscribe follows run events (events.Bus.Subscribe).
func (e *Engine) Subscribe(filter func(events.Event) bool, after uint64, buf int) (*events.Subscription, bool) {
	return e.events.Subscribe(filter, after, buf)
}

// Subscribers is how many event subscriptions are open.
func (e *Engine) Subscribers() int { return e.events.Subscribers() }

// QueueStats is the global queue's state now.
func (e *Engine) QueueStats() queue.Stats { return e.queue.Stats() }

// ChatKeys lists every chat that has a log.
func (e *Engine) ChatKeys(ctx context.Context) ([]string, error) { return e.store.ChatKeys(ctx) }

// ChatStats is a chat's message count and last activity.
func (e *Engine) ChatStats(ctx context.Context, chatKey string) (chat.ChatStats, error) {
	return e.store.Stats(ctx, chatKey)
}

// Recent is a chat's last n log entries, oldest first.
func (e *Engine) Recent(ctx context.Context, chatKey string, n int) ([]chat.ChatLogEntryV1, error) {
	return e.store.Recent(ctx, chatKey, n)
}

// Search is a chat's newest entries that contain keyword, newest first.
func (e *Engine) Search(ctx context.Context, chatKey, keyword string, limit int) ([]chat.ChatLogEntryV1, error) {
	return e.store.Search(ctx, chatKey, keyword, limit)
}

// Scan reads a chat's whole log, oldest first, until fn returns false
// (the scheduler finds a task's chat route with it).
func (e *Engine) Scan(ctx context.Context, chatKey string, fn func(chat.ChatLogEntryV1) bool) error {
	return e.store.Scan(ctx, chatKey, fn)
}

// Lookup finds the dispatcher registered for channel. Parts of the core
// built beside the engine (the task scheduler) ask a chat's platform
// through it what they may not decide by the platform's name: how a post
// ship makes on its own reaches the chat (dispatch.TaskRoute).
func (e *Engine) Lookup(channel string) (dispatch.Dispatcher, bool) {
	return e.registry.Lookup(channel)
}

// Pending lists the approvals waiting in chatKey ("" for every chat).
func (e *Engine) Pending(chatKey string) ([]policy.Approval, bool) {
	if e.gov.approvals == nil {
		return nil, false
	}
	return e.gov.approvals.Pending(chatKey), true
}

// Approvers are the tool-policy roles whose members may approve.
func (e *Engine) Approvers() []string { return e.gov.current().ApproverRoles() }

// RoleMayApprove says whether members of role may approve.
func (e *Engine) RoleMayApprove(role string) bool { return e.gov.current().RoleMayApprove(role) }

// ChatsInMemory is how many chats' history the runtime holds in memory
// (the memory benchmark reports it beside the heap).
func (e *Engine) ChatsInMemory() int { return e.runtime.ChatsInMemory() }
