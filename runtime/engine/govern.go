package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
)

// governor is the agent.Gate of every run: the tool policy decides which
// tools the model sees and whether each call may run; a call that needs
// approval is asked for in the chat and ends as a tool result, so the queue
// is never held by someone who has not answered yet.
type governor struct {
	policy    func() *policy.Policy
	approvals *policy.Store // nil: no approvals file, requireApproval refuses
	liners    map[string]agent.CommandLiner
	registry  *dispatch.Registry
	log       zerolog.Logger
	// wake tells the expiry sweeper a new approval is waiting.
	wake chan struct{}
}

// runScope is what the governor knows of one run, fixed when it starts:
// one run sees one policy, even if ship.json changes under it.
type runScope struct {
	policy    *policy.Policy
	subject   policy.Subject
	narrowing policy.Narrowing
	req       dispatch.RequestContext
	// limits are what the run's own tools tightened (a skill's
	// allowed-tools); nil outside a run.
	limits *policy.RunLimits
	// sub is the run's place among sub-agents (subagents.go).
	sub *subScope
}

// defaultVerdict is a tool's verdict where no rule decides: the chat_*,
// skills_* and memory_* tools are the conversation itself (memory_* reach
// only the run's own chat's notes and the speaker's) and are allowed, except
// that messaging other people (chat_contact_*) is off in group chats; a
// tool that acts (exec_shell, MCP, tasks) is denied until a rule allows
// it.
func defaultVerdict(tool string, req dispatch.RequestContext) policy.Verdict {
	switch {
	case strings.HasPrefix(tool, "chat_contact_"):
		if chat.IsGroup(req.ChatType) {
			return policy.Deny
		}
		return policy.Allow
	case strings.HasPrefix(tool, "chat_"), strings.HasPrefix(tool, "skills_"), strings.HasPrefix(tool, "memory_"):
		return policy.Allow
	}
	return policy.Deny
}

// identity is how the policy names a person: "channel:userId". An api
// message's userId is only what its caller said: the server passes who the
// token proves as the job's Identity, and an api run without one (none
// should exist) gets no more than an anonymous caller.
func identity(req dispatch.RequestContext) string {
	if req.Channel == chat.ChannelAPI {
		return chat.APIAnonymous
	}
	return req.Channel + ":" + req.UserID
}

// current returns the policy in force now.
func (g *governor) current() *policy.Policy {
	if g.policy == nil {
		return nil
	}
	return g.policy()
}

// begin fixes the run's scope in run: the policy in force now, who asked,
// where, and the limits its own tools may add.
func (g *governor) begin(run *dispatch.Run, job ingress.Job) {
	limits := &policy.RunLimits{}
	who := job.Identity
	if who == "" {
		who = identity(job.Route)
	}
	run.Limits = limits
	run.Identity = who
	run.Scope = runScope{
		policy:    g.current(),
		subject:   policy.Subject{Identity: who, ChatKey: job.Route.ChatKey},
		narrowing: policy.Narrowing(job.Tools),
		req:       job.Route,
		limits:    limits,
		sub:       &subScope{},
	}
}

func (g *governor) scope(ctx context.Context) runScope {
	run, _ := dispatch.RunFrom(ctx)
	if sc, ok := run.Scope.(runScope); ok {
		return sc
	}
	req, _ := dispatch.RequestFromContext(ctx)
	return runScope{policy: g.current(), subject: policy.Subject{Identity: identity(req), ChatKey: req.ChatKey}, req: req}
}

// Offered implements agent.Gate.
func (g *governor) Offered(ctx context.Context, tool string) bool {
	sc := g.scope(ctx)
	return sc.limits.Offers(tool) && sc.sub.offers(tool) && sc.policy.Offered(sc.subject, tool, sc.narrowing, defaultVerdict(tool, sc.req))
}

// Check implements agent.Gate.
func (g *governor) Check(ctx context.Context, tool string, args json.RawMessage) agent.Verdict {
	sc := g.scope(ctx)
	call := policy.Call{Tool: tool}
	if l, ok := g.liners[tool]; ok {
		call.Arg, _ = l.CommandLine(args) // bad arguments: the tool itself says what is wrong
	}
	if ok, why := sc.limits.Check(call); !ok {
		return refuse(agent.RefusedByPolicy, why, nil)
	}
	if !sc.sub.offers(tool) {
		return refuse(agent.RefusedByPolicy, fmt.Sprintf("refused: sub-agent %s may not use %s (not among the tools it was given, or a chat tool)", sc.sub.jobID, tool), nil)
	}
	d := sc.policy.Decide(sc.subject, call, sc.narrowing, defaultVerdict(tool, sc.req))
	switch d.Verdict {
	case policy.Allow:
		return agent.Verdict{Allow: true}
	case policy.RequireApproval:
		if sc.sub != nil && sc.sub.depth > 0 {
			return refuse(agent.RefusedByPolicy, "refused: this call needs approval, and a sub-agent cannot ask for or grant one; report back so the person can ask for it: "+d.Reason, map[string]any{"policy": d})
		}
		return g.approval(ctx, sc, call, args, d)
	}
	return refuse(agent.RefusedByPolicy, "refused by the tool policy: "+d.Reason, map[string]any{"policy": d})
}

// refuse builds a verdict whose tool result says why the call did not run.
func refuse(kind, reason string, fields map[string]any) agent.Verdict {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["success"] = false
	fields["error"] = reason
	b, err := json.Marshal(fields)
	if err != nil {
		b = []byte(`{"success":false,"error":"refused"}`)
	}
	return agent.Verdict{Refusal: kind, Reason: reason, Content: string(b)}
}

// approval runs a call someone approved (using its grant) or asks for
// approval in the chat.
func (g *governor) approval(ctx context.Context, sc runScope, call policy.Call, args json.RawMessage, d policy.Decision) agent.Verdict {
	log := zerolog.Ctx(ctx).With().Str("tool", call.Tool).Logger()
	if g.approvals == nil {
		return refuse(agent.RefusedByPolicy, "this call needs approval, and approvals are not available here: "+d.Reason, map[string]any{"policy": d})
	}
	grant, ok, err := g.approvals.UseGrant(sc.subject.ChatKey, call.Tool, args)
	if err != nil {
		log.Error().Err(err).Msg("recording the use of an approval")
		return refuse(agent.RefusedByPolicy, "the approval for this call could not be recorded; it did not run", nil)
	}
	if ok {
		log.Info().Str("approval", grant.Code).Str("approvedBy", grant.ApprovedBy).Int("uses", grant.Uses).Msg("approved call runs")
		return agent.Verdict{Allow: true}
	}
	route, err := json.Marshal(sc.req)
	if err != nil {
		return refuse(agent.RefusedByPolicy, "asking for approval failed", nil)
	}
	a, err := g.approvals.Request(policy.ApprovalRequest{
		ChatKey: sc.subject.ChatKey, Identity: sc.subject.Identity, Tool: call.Tool, Arg: call.Arg, ArgsJSON: args, Route: route,
	})
	if err != nil {
		reason := "asking for approval failed"
		if errors.Is(err, policy.ErrTooManyPending) {
			reason = "too many approvals are waiting in this chat; ask the approvers to answer them first"
		} else {
			log.Error().Err(err).Msg("recording an approval request")
		}
		return refuse(agent.RefusedByPolicy, reason, nil)
	}
	select {
	case g.wake <- struct{}{}:
	default:
	}
	approvers := sc.policy.ApproverRoles()
	posted := g.post(ctx, sc.req, approvalText(a, approvers, sc.req), a.Code)
	if posted != nil {
		log.Error().Err(posted).Str("approval", a.Code).Msg("posting an approval request")
	}
	log.Info().Str("approval", a.Code).Str("identity", a.Identity).Msg("approval asked")
	msg := fmt.Sprintf("Approval was asked in the chat with code %s; the call runs when an approver answers, before %s. "+
		"Tell the user it waits for approval and end your turn; do not call it again now.", a.Code, a.Expires.UTC().Format("15:04 MST"))
	if posted != nil {
		msg = fmt.Sprintf("The approval request (code %s) could not be posted to the chat. Tell the user an approver can answer with /approve %s.", a.Code, a.Code)
	}
	fields := map[string]any{"approvalRequired": true, "approvalCode": a.Code, "expires": a.Expires.UTC(), "message": msg}
	if len(approvers) == 0 {
		fields["warning"] = `no role may approve ("approve": true in ship.json tools.roles): it will expire unanswered`
	}
	return refuse(agent.RefusedPendingApproval, d.Reason, fields)
}

// post sends an approval request into the chat and topic of req, with
// Approve and Deny buttons where the platform has them.
func (g *governor) post(ctx context.Context, req dispatch.RequestContext, text, code string) error {
	return g.registry.SendButtons(ctx, req, text, []dispatch.Button{
		{Text: "Approve", Data: "/approve " + code},
		{Text: "Deny", Data: "/deny " + code},
	})
}

// approvalText is what the chat sees: what would run, who asked, who may
// answer, the code and until when. Names and the call are shown with
// policy.Visible, so a bidi control cannot make them read as something
// else.
func approvalText(a policy.Approval, approvers []string, req dispatch.RequestContext) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval needed, code %s\n%s wants to run %s", a.Code, who(req.Username, a.Identity), policy.VisibleLine(a.Tool))
	if a.Arg != "" {
		fmt.Fprintf(&b, ":\n%s", policy.Visible(clip(a.Arg, 500)))
	} else {
		fmt.Fprintf(&b, " with %s", policy.Visible(clip(string(a.ArgsJSON), 300)))
	}
	switch len(approvers) {
	case 0:
		b.WriteString("\nNobody is set up to approve (no role has \"approve\": true); it will expire.")
	default:
		fmt.Fprintf(&b, "\nWho may approve: role %s.", strings.Join(approvers, ", role "))
	}
	fmt.Fprintf(&b, "\nAnswer before %s: /approve %s or /deny %s", a.Expires.UTC().Format("15:04 MST"), a.Code, a.Code)
	if req.Channel == chat.ChannelAPI {
		// An api chat has no buttons and no chat app: say where these go.
		b.WriteString(" as the message of POST /api/execute or /api/send in this chat (the caller's token decides who answers), " +
			"or on the console's Approvals page")
	}
	return b.String()
}

// who names a person for the chat: their display name when known, on one
// line and with invisible characters shown (policy.VisibleLine).
func who(username, identity string) string {
	if username != "" {
		return policy.VisibleLine(username)
	}
	return policy.VisibleLine(identity)
}
