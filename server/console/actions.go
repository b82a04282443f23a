package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/runtime/turn"
)

// consoleUser is the api user id of messages sent from the console.
const consoleUser = "console"

// identity is who the console's user is in the tool policy. Signed in
// with the token, they are the operator: chat.APIConsole. Without a token
// anyone on this machine can use the console (any local user or process),
// as they can the API: they are chat.APIAnonymous, like an API caller.
func (c *Console) identity() string {
	if c.opts.Token != "" {
		return chat.APIConsole
	}
	return chat.APIAnonymous
}

// send queues text in the api chat key as the console's user.
func (c *Console) send(r *http.Request, key, chatID, text string) error {
	id := "c-" + randomHex(8)
	who := c.identity()
	_, err := c.opts.Door.Submit(r.Context(), ingress.Submission{
		ID:      id,
		Channel: chat.ChannelAPI,
		ChatKey: key,
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: text, MessageID: id, UserID: consoleUser,
			Username: consoleUser, ChatType: chat.ChatTypeAPI},
		Meta: map[string]any{"identity": who},
		Once: true,
		Turn: turn.Turn{Identity: who},
	})
	return err
}

// sendError says why the console's message was not taken.
func (c *Console) sendError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case ingress.IsStopped(err):
		plain(w, http.StatusServiceUnavailable, "ship is shutting down; the message was not taken.")
	case ingress.IsBusy(err): // the queue is full
		plain(w, http.StatusServiceUnavailable, "ship is busy: the queue is full. Try again in a few seconds.")
	case errors.Is(err, ingress.ErrRateLimited):
		plain(w, http.StatusTooManyRequests, "Too many messages in a row: wait a moment, then send it again. The message was not taken.")
	case ingress.RefusalCode(err) == "BUDGET_EXCEEDED": // limits.tokens
		plain(w, http.StatusTooManyRequests, "Not taken: "+err.Error()+".")
	default:
		c.fail(w, r, err)
	}
}

// handleEvents is the event stream the Chat page (one chat) and the
// Overview (every chat) follow.
func (c *Console) handleEvents(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("chat")
	if key != "" {
		if _, err := chat.EscapeChatKey(key); err != nil {
			plain(w, http.StatusBadRequest, "That is not a chat key.")
			return
		}
	}
	c.opts.Events(w, r, key)
}

// pendingView is one approval request waiting for a decision.
type pendingView struct {
	Code, ChatKey, Who, Tool, Arg string
	Asked, Expires                time.Time
}

func pendingOf(a policy.Approval) pendingView {
	// Ids and the command are shown with bidi and invisible characters
	// escaped: a U+202E in a user id could make the page read otherwise
	// than what would run and who asked.
	return pendingView{Code: a.Code, ChatKey: a.ChatKey, Who: policy.VisibleLine(a.Identity), Tool: policy.VisibleLine(a.Tool),
		Arg: policy.Visible(a.Arg), Asked: a.Created, Expires: a.Expires}
}

type approvalsData struct {
	Enabled    bool
	Role       string
	MayApprove bool
	Approvers  []string
	Pending    []pendingView
}

func (c *Console) handleApprovals(w http.ResponseWriter, r *http.Request) {
	view := c.opts.View
	pending, enabled := view.Pending("")
	d := approvalsData{Enabled: enabled, Role: c.opts.Role, Approvers: view.Approvers()}
	d.MayApprove = c.opts.Role != "" && view.RoleMayApprove(c.opts.Role)
	if enabled {
		for _, a := range pending {
			d.Pending = append(d.Pending, pendingOf(a))
		}
		slices.SortFunc(d.Pending, func(a, b pendingView) int { return a.Asked.Compare(b.Asked) })
	}
	c.render(w, r, "Approvals", d.write)
}

// decider is the console's user as the decider of an approval: from
// outside any chat, acting as a member of Options.Role.
func (c *Console) decider() engine.Decider {
	return engine.Decider{Identity: "console:" + c.opts.Role, Name: "the console (" + c.opts.Role + ")", AsRole: c.opts.Role}
}

// handleDecide approves or denies a request through the same call as
// /approve and /deny in the chat (engine.Door.Decide); the console's user
// acts as Options.Role.
func (c *Console) handleDecide(w http.ResponseWriter, r *http.Request) {
	verb := r.PathValue("verb")
	if verb != "approve" && verb != "deny" {
		plain(w, http.StatusNotFound, "Unknown decision "+verb+": use approve or deny.")
		return
	}
	code := r.PathValue("code")
	err := c.opts.Door.Decide(r.Context(), code, verb == "approve", c.decider())
	var refused *engine.RefusalError
	switch {
	case err == nil:
		c.log.Info().Str("approval", strings.ToUpper(code)).Str("decision", verb).Str("role", c.opts.Role).Msg("approval decided in the console")
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, engine.ErrApprovalsOff):
		plain(w, http.StatusConflict, "Approvals are not enabled here.")
	case errors.Is(err, policy.ErrNotApprover) && c.opts.Role == "":
		plain(w, http.StatusForbidden, "The console may not approve: set server.consoleRole in ship.json to a tool-policy role with \"approve\": true.")
	case errors.As(err, &refused):
		status := http.StatusConflict
		switch {
		case errors.Is(err, policy.ErrUnknownCode):
			status = http.StatusNotFound
		case errors.Is(err, policy.ErrNotApprover):
			status = http.StatusForbidden
		}
		plain(w, status, refused.Text)
	default:
		c.fail(w, r, err)
	}
}

type tasksData struct {
	Enabled bool
	Tasks   []tasks.Status
}

func (c *Console) handleTasks(w http.ResponseWriter, r *http.Request) {
	d := tasksData{Enabled: c.opts.Tasks != nil}
	if c.opts.Tasks != nil {
		list, err := c.opts.Tasks.List(r.Context())
		if err != nil {
			c.fail(w, r, err)
			return
		}
		d.Tasks = list
	}
	c.render(w, r, "Tasks", d.write)
}

// handleRunTask queues a task's run now, as POST /api/tasks/{name}/run.
func (c *Console) handleRunTask(w http.ResponseWriter, r *http.Request) {
	if c.opts.Tasks == nil {
		plain(w, http.StatusNotFound, "Scheduled tasks are not enabled here.")
		return
	}
	name := r.PathValue("name")
	id, err := c.opts.Tasks.RunNow(r.Context(), name)
	switch {
	case err == nil:
		c.log.Info().Str("task", name).Str("taskId", id).Msg("task run from the console")
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, tasks.ErrNotFound):
		plain(w, http.StatusNotFound, "There is no task "+name+".")
	case ingress.IsBusy(err):
		c.sendError(w, r, err)
	default:
		plain(w, http.StatusConflict, "The task did not start: "+c.opts.Redact(err.Error()))
	}
}

type toolsData struct {
	User, ChatKey, Command string
	Report                 engine.ToolsReport
}

// handleTools shows each tool and the policy in force, for anyone or, as
// the form asks, for one user in one chat.
func (c *Console) handleTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := toolsData{User: strings.TrimSpace(q.Get("user")), ChatKey: strings.TrimSpace(q.Get("chat")), Command: q.Get("command")}
	if len(d.User) > 256 || len(d.ChatKey) > 512 || len(d.Command) > 4096 {
		plain(w, http.StatusBadRequest, "user, chat or command is too long.")
		return
	}
	d.Report = c.opts.View.Tools(d.ChatKey, d.User, d.Command)
	c.render(w, r, "Tools", d.write)
}
