package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/events"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/profiles"
	"github.com/shipmyagent/ship/runtime/queue"
)

// route decides which agent profile answers item and applies it to the
// job: the text loses the "/agent NAME" that picked it, the profile's model
// answers unless the request named one, and its tool rules join the
// request's (they only narrow, and deny wins as everywhere). routed is false
// without profiles: nothing changed and there is nothing to announce.
func (r *Runner) route(item *queue.Item[ingress.Job], log *zerolog.Logger) (d profiles.Decision, routed bool) {
	if r.profiles.Len() == 0 {
		return profiles.Decision{Text: item.Value.Text}, false
	}
	job := item.Value
	d = r.profiles.Route(item.ChatKey, job.Text)
	p := d.Profile
	job.Text = d.Text
	if p.Model != "" && job.Model.Model == "" {
		job.Model.Model = p.Model
	}
	job.Tools.Deny = slices.Concat(job.Tools.Deny, p.Tools.Deny)
	job.Tools.RequireApproval = slices.Concat(job.Tools.RequireApproval, p.Tools.RequireApproval)
	item.Value = job
	*log = log.With().Str("agent", p.Name).Logger()
	log.Info().Str("reason", d.Reason).Msg("route decided")
	return d, true
}

// routeDecided announces a run's profile (route_decided).
func (r *runEvents) routeDecided(d profiles.Decision) {
	r.publish(events.Event{Type: events.TypeRouteDecided, Agent: d.Profile.Name, Reason: d.Reason})
}

// agentHelp is /help's line about /agent, when there are profiles.
func (e *Engine) agentHelp() string {
	if e.profiles.Len() == 0 {
		return ""
	}
	return "/agent – list the agents; /agent NAME <text> or @NAME <text> asks one\n"
}

// agentCommand answers "/agent" alone or with a name that is no profile:
// the list of profiles. "/agent NAME text" is not a command: ok is false
// and the message goes to the queue, where the run routes it to NAME.
func (e *Engine) agentCommand(args string) (string, bool) {
	names := e.profiles.Names()
	if len(names) == 0 {
		return "No agent profiles are configured (agents in ship.json): the default agent answers every message.", true
	}
	if !slices.Contains(names, profiles.DefaultName) {
		names = append([]string{profiles.DefaultName}, names...)
	}
	name, text, _ := strings.Cut(strings.TrimSpace(args), " ")
	if _, ok := e.profiles.Get(name); ok && strings.TrimSpace(text) != "" {
		return "", false
	}
	var b strings.Builder
	if name != "" {
		if _, ok := e.profiles.Get(name); ok {
			fmt.Fprintf(&b, "Write your message after the name: /agent %s <text>.\n", name)
		} else {
			fmt.Fprintf(&b, "There is no agent %q.\n", name)
		}
	}
	b.WriteString("Agents:")
	for _, n := range names {
		p, _ := e.profiles.Get(n)
		fmt.Fprintf(&b, "\n• %s", n)
		if p.Model != "" {
			fmt.Fprintf(&b, " – model %s", p.Model)
		}
		if len(p.Chats) > 0 {
			fmt.Fprintf(&b, " – answers in %s", strings.Join(p.Chats, ", "))
		}
	}
	b.WriteString("\nPick one for a message with /agent NAME <text> or @NAME <text>.")
	return b.String(), true
}
