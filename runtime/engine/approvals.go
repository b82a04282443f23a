package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/turn"
)

// noteTimeout bounds one note of the engine's own (a denial, an expiry).
const noteTimeout = 30 * time.Second

// answerApproval handles "/approve CODE" and "/deny CODE" from req, through
// Decide like the console's buttons. A decision is announced to the whole
// chat (an approval by the turn it starts, a denial by a note), so a
// decider gets no reply of their own; a refusal is answered to them only:
// it says why nothing happened.
func (e *Engine) answerApproval(ctx context.Context, approve bool, args string, req dispatch.RequestContext) string {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	code, _, _ := strings.Cut(strings.TrimSpace(args), " ")
	if code == "" {
		return fmt.Sprintf("Usage: /%s CODE (the code is in the approval request).", verb)
	}
	err := e.Decide(ctx, code, approve, Decider{Identity: identity(req), Name: who(req.Username, identity(req)), In: req})
	var refused *RefusalError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrApprovalsOff):
		return "Approvals are not enabled here."
	case errors.As(err, &refused):
		return refused.Text
	}
	return "Answering the approval failed; try again." // Decide returns no other error
}

// ErrApprovalsOff is returned by Decide when ship runs without an
// approvals store.
var ErrApprovalsOff = errors.New("approvals are not enabled")

// Decider is who answers an approval, as data: a person in a chat and the
// web console take the same path (Decide), and differ only here.
type Decider struct {
	// Identity is who decides, in the tool policy and the audit entries
	// ("telegram:42"; the console is "console:<role>").
	Identity string
	// Name is how the chat is told who decided ("@alice", "the console
	// (ops)").
	Name string
	// AsRole, when set, makes the decider act as a member of that
	// tool-policy role instead of by Identity's memberships: the console's
	// user is server.consoleRole, which no chat identity names.
	AsRole string
	// In is the chat message the answer came in. Then the approval must
	// be of that chat, and an approved call's turn answers that message.
	// Zero for an answer from outside any chat (the console): it may
	// answer an approval of any chat, and approves only through AsRole.
	In dispatch.RequestContext
}

// mayApprove says whether by may approve under pol.
func (by Decider) mayApprove(pol *policy.Policy) bool {
	switch {
	case by.AsRole != "":
		return pol.RoleMayApprove(by.AsRole)
	case by.In.ChatKey == "":
		return false // from outside a chat, only a role may approve
	}
	return pol.CanApprove(by.Identity)
}

// Decide approves or denies the approval code as by. The rules,
// announcements and audit entries are the same wherever the answer came
// from; a refusal is a *RefusalError whose Text says why nothing happened,
// in the words a chat gets.
func (e *Engine) Decide(ctx context.Context, code string, approve bool, by Decider) error {
	if e.gov.approvals == nil {
		return ErrApprovalsOff
	}
	pol := e.gov.current()
	approver := policy.Approver{Identity: by.Identity, ChatKey: by.In.ChatKey, MayApprove: by.mayApprove(pol)}
	if approver.ChatKey == "" {
		// From outside any chat: the approval's own chat. An unknown code
		// leaves a zero: decide then reports it as unknown.
		a, _ := e.gov.approvals.Get(strings.ToUpper(strings.TrimSpace(code)))
		approver.ChatKey = a.ChatKey
	}
	if err := e.decide(ctx, code, approve, approver, by.Name, by.In); err != nil {
		return &RefusalError{Err: err, Text: e.approvalRefusal(err, code, approve, pol)}
	}
	return nil
}

// RefusalError is an approval decision that did nothing; Text says why, in
// the words a chat would get.
type RefusalError struct {
	Err  error
	Text string
}

func (r *RefusalError) Error() string { return r.Text }
func (r *RefusalError) Unwrap() error { return r.Err }

// decide approves or denies code as by, named approver in what the chat is
// told. req is the answering message when the answer came from a chat; an
// approved call's turn answers it, else the message that asked.
func (e *Engine) decide(ctx context.Context, code string, approve bool, by policy.Approver, approver string, req dispatch.RequestContext) error {
	log := e.log.With().Str("chatKey", by.ChatKey).Str("approval", strings.ToUpper(code)).Str("identity", by.Identity).Logger()
	if !approve {
		a, err := e.gov.approvals.Deny(code, by)
		if err != nil {
			log.Info().Err(err).Msg("deny refused")
			return err
		}
		log.Info().Msg("approval denied")
		e.announce(a, fmt.Sprintf("Denied by %s: %s will not run (code %s).", approver, callText(a), a.Code),
			"approval "+a.Code+" denied by "+by.Identity)
		return nil
	}
	a, _, err := e.gov.approvals.Approve(code, by)
	if err != nil {
		log.Info().Err(err).Msg("approval refused")
		return err
	}
	log.Info().Msg("approved")
	route, ok := routeOf(a)
	if !ok {
		if req.ChatKey == "" {
			return fmt.Errorf("approval %s has no route to its chat", a.Code)
		}
		route = req // the approval was decided in its own chat: answer there
	}
	answers := route.MessageID
	if req.MessageID != "" {
		answers = req.MessageID
	}
	_, err = e.ingress.Submit(ctx, ingress.Submission{
		Channel: route.Channel, ChatKey: a.ChatKey,
		Message: ingress.IncomingChatMessage{
			ChatID: route.ChatID, ChatType: route.ChatType, MessageThreadID: route.MessageThreadID, ThreadID: route.ThreadID,
			// The turn is the requester's (their rights apply to what the
			// model does next); it answers the approving message.
			UserID: route.UserID, Username: route.Username, MessageID: answers,
			Text: fmt.Sprintf("[%s approved %s (code %s); it ran as asked and its result follows. Continue from it.]",
				approver, callText(a), a.Code),
		},
		Meta: map[string]any{"approval": a.Code, "approvedBy": by.Identity},
		Turn: turn.Turn{
			// Who asked, as the policy knew them: an api caller's token
			// identity or a task's, which the route's userId does not tell.
			Identity: a.Identity,
			Preset:   []agent.PresetCall{{Tool: a.Tool, Args: string(a.ArgsJSON)}},
			Notice:   fmt.Sprintf("Approved by %s: running %s (code %s).", approver, callText(a), a.Code),
		},
		// A person's decision, not the requester's next message: it is
		// not counted against the requester's limit.
		Unlimited: true,
	})
	if err != nil {
		// The grant stands: asking the model again runs the call.
		log.Error().Err(err).Msg("queueing an approved call")
		return &RefusalError{Err: err, Text: fmt.Sprintf("Approved %s, but I could not start it now (%v). Ask me again and it runs without a new approval.", a.Code, err)}
	}
	return nil
}

// approvalRefusal says why an /approve or /deny did nothing.
func (e *Engine) approvalRefusal(err error, code string, approve bool, pol *policy.Policy) string {
	var refused *RefusalError
	if errors.As(err, &refused) {
		return refused.Text
	}
	code = strings.ToUpper(strings.TrimSpace(code))
	a, _ := e.gov.approvals.Get(code)
	// The code is as typed, and DecidedBy an identity: both are shown.
	code, a.DecidedBy = policy.VisibleLine(code), policy.VisibleLine(a.DecidedBy)
	switch {
	case errors.Is(err, policy.ErrUnknownCode):
		return fmt.Sprintf("There is no approval with code %s.", code)
	case errors.Is(err, policy.ErrWrongChat):
		return fmt.Sprintf("Approval %s was asked in another chat; answer it there.", code)
	case errors.Is(err, policy.ErrNotApprover):
		roles := pol.ApproverRoles()
		if len(roles) == 0 {
			return "You may not approve tool calls: nobody may (no role has \"approve\": true)."
		}
		if !approve {
			return fmt.Sprintf("Only the person who asked or an approver (role %s) may deny %s.", strings.Join(roles, ", role "), code)
		}
		return fmt.Sprintf("You may not approve tool calls; role %s may.", strings.Join(roles, ", role "))
	case errors.Is(err, policy.ErrAlreadyApproved):
		return fmt.Sprintf("Approval %s was already approved by %s and used; it runs only once.", code, a.DecidedBy)
	case errors.Is(err, policy.ErrAlreadyDenied):
		return fmt.Sprintf("Approval %s was already denied by %s.", code, a.DecidedBy)
	case errors.Is(err, policy.ErrExpired):
		return fmt.Sprintf("Approval %s expired at %s; nothing ran. Ask me again if it is still needed.", code, a.Expires.UTC().Format("15:04 MST"))
	}
	e.log.Error().Err(err).Str("approval", code).Msg("answering an approval")
	return "Answering the approval failed; try again."
}

// routeOf is where the call of a was asked (the governor keeps it as the
// approval's Route): its chat, topic and asking message.
func routeOf(a policy.Approval) (dispatch.RequestContext, bool) {
	var route dispatch.RequestContext
	if err := json.Unmarshal(a.Route, &route); err != nil || route.ChatKey != a.ChatKey {
		return dispatch.RequestContext{}, false
	}
	return route, true
}

// callText shows a call in one line: "exec_shell `git log -3`", with
// invisible characters shown (policy.Visible).
func callText(a policy.Approval) string {
	if a.Arg != "" {
		return fmt.Sprintf("%s `%s`", policy.VisibleLine(a.Tool), policy.Visible(clip(a.Arg, 200)))
	}
	return policy.VisibleLine(a.Tool)
}

// announce tells an approval's chat what became of it, in the background
// (a command's handler must not wait for a send), and leaves a system
// entry in the chat log for audits.
func (e *Engine) announce(a policy.Approval, text, logText string) {
	route, ok := routeOf(a)
	if !ok {
		e.log.Error().Str("approval", a.Code).Msg("approval without a route: cannot tell its chat")
		return
	}
	e.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, noteTimeout)
		defer cancel()
		log := e.log.With().Str("chatKey", a.ChatKey).Str("approval", a.Code).Logger()
		if _, err := e.store.Append(ctx, chat.ChatLogEntryV1{
			Channel: route.Channel, ChatID: route.ChatID, ChatKey: a.ChatKey, Role: chat.RoleSystem, Text: logText,
			Meta: map[string]any{"approval": a.Code, "status": string(a.Status)},
		}); err != nil {
			log.Error().Err(err).Msg("logging an approval's outcome")
		}
		if err := e.registry.SendText(ctx, route, text); err != nil {
			log.Warn().Err(err).Msg("telling a chat about its approval")
		}
	})
}

// maxSweepWait bounds the sweeper's sleep, so a clock change or a
// missed wake-up costs at most this much delay.
const maxSweepWait = time.Minute

// sweep reports each approval that expires unanswered, once, until ctx
// ends. It sleeps until the next expiry and is woken when a new approval
// waits.
func (e *Engine) sweep(ctx context.Context) {
	for {
		expired, err := e.gov.approvals.Expire()
		if err != nil {
			e.log.Error().Err(err).Msg("expiring approvals")
		}
		for _, a := range expired {
			e.log.Info().Str("chatKey", a.ChatKey).Str("approval", a.Code).Msg("approval expired unanswered")
			e.announce(a, fmt.Sprintf("Approval %s expired unanswered: %s did not run.", a.Code, callText(a)),
				"approval "+a.Code+" expired")
		}
		wait := maxSweepWait
		if p := e.gov.approvals.Pending(""); len(p) > 0 {
			next := p[0].Expires
			for _, a := range p[1:] {
				if a.Expires.Before(next) {
					next = a.Expires
				}
			}
			wait = min(max(time.Until(next), 10*time.Millisecond), maxSweepWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-e.gov.wake:
			t.Stop()
		case <-t.C:
		}
	}
}
