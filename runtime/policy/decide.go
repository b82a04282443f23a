package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Verdict is what happens to a tool call.
type Verdict string

// The verdicts. A zero or unknown Verdict given as a default counts as
// Deny.
const (
	Allow           Verdict = "allow"
	Deny            Verdict = "deny"
	RequireApproval Verdict = "requireApproval"
)

func (v Verdict) valid() bool { return v == Allow || v == Deny || v == RequireApproval }

// Layer names where a decision came from, from low to high: global, role,
// chat, request; default when no rule decided.
type Layer string

// The layers.
const (
	LayerDefault Layer = "default"
	LayerGlobal  Layer = "global"
	LayerRole    Layer = "role"
	LayerChat    Layer = "chat"
	LayerRequest Layer = "request"
)

func (l Layer) rank() int {
	switch l {
	case LayerGlobal:
		return 1
	case LayerRole:
		return 2
	case LayerChat:
		return 3
	case LayerRequest:
		return 4
	}
	return 0
}

// Subject is who calls a tool, and where.
type Subject struct {
	Identity string // "channel:userId", like "telegram:123456" or "api:client-7"
	ChatKey  string // like "telegram:chat:-100123"
}

// AnonymousAPI is the identity of every HTTP API caller that did not
// authenticate. Role membership never matches it by a glob: "api:*" (or
// "api:a*") stands for the API clients someone identified, not for
// whoever reaches the port, so only a member written out exactly as
// "api:anonymous" takes it in. Server code names callers with it.
const AnonymousAPI = "api:anonymous"

// Call is one tool call.
type Call struct {
	Tool string // like "exec_shell" or "mcp.github.create_issue"
	// Arg is the command-like argument argument patterns are matched
	// against: the command line for exec_shell, "" for other tools.
	Arg string
}

// Narrowing is the request layer: rules an /api/execute or /api/send body
// adds for its own run. It can only narrow; it has no allow list.
type Narrowing struct {
	Deny            []string `json:"deny,omitempty"`
	RequireApproval []string `json:"requireApproval,omitempty"`
}

// Decision is a verdict and why.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Layer   Layer   `json:"layer"`
	// Source is the part of the configuration that decided: "global",
	// "role admin", "chat telegram:chat:-100*", "request" or "default".
	Source string `json:"source"`
	Rule   string `json:"rule,omitempty"` // the deciding rule as written; "" for a default
	Reason string `json:"reason"`         // one sentence, for people and for the model
}

// Rule is one configured rule that concerns a tool, as Rules lists it.
type Rule struct {
	Layer   Layer   `json:"layer"`
	Source  string  `json:"source"`
	Verdict Verdict `json:"verdict"` // the list it is in
	Text    string  `json:"rule"`
}

// srcRule is a rule with where it came from.
type srcRule struct {
	rule
	layer   Layer
	source  string
	verdict Verdict
}

func (r srcRule) where() string { return fmt.Sprintf("%s rule %q", r.source, r.text) }

// Validate checks the request layer's rules.
func (n Narrowing) Validate() error {
	_, err := n.rules("")
	return err
}

func (n Narrowing) rules(tool string) ([]srcRule, error) {
	var out []srcRule
	for _, l := range []struct {
		name    string
		list    []string
		verdict Verdict
	}{{"deny", n.Deny, Deny}, {"requireApproval", n.RequireApproval, RequireApproval}} {
		rs, err := ruleList(l.list, "request "+l.name)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if tool == "" || r.matchTool(tool) {
				out = append(out, srcRule{r, LayerRequest, "request", l.verdict})
			}
		}
	}
	return out, nil
}

// ParseNarrowing reads a request body's tools object strictly:
// {"deny": [...], "requireApproval": [...]}. An "allow" field is refused
// with an error saying a request may only narrow.
func ParseNarrowing(raw json.RawMessage) (Narrowing, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return Narrowing{}, nil
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) == nil {
		if _, ok := probe["allow"]; ok {
			return Narrowing{}, fmt.Errorf("%w: request tools: a request may only narrow: \"allow\" is not accepted", ErrConfig)
		}
	}
	fields, err := object(raw, "request tools", "deny", "requireApproval")
	if err != nil {
		return Narrowing{}, err
	}
	var n Narrowing
	if n.Deny, err = stringList(fields["deny"], "request tools.deny"); err != nil {
		return Narrowing{}, err
	}
	if n.RequireApproval, err = stringList(fields["requireApproval"], "request tools.requireApproval"); err != nil {
		return Narrowing{}, err
	}
	return n, n.Validate()
}

// applicable lists the rules that apply to the subject and name the tool,
// highest layer first.
func (p *Policy) applicable(s Subject, tool string, n Narrowing) ([]srcRule, error) {
	out, err := n.rules(tool)
	if err != nil {
		return nil, err
	}
	add := func(rs ruleSet, layer Layer, source string) {
		for _, l := range []struct {
			list    []rule
			verdict Verdict
		}{{rs.allow, Allow}, {rs.deny, Deny}, {rs.approval, RequireApproval}} {
			for _, r := range l.list {
				if r.matchTool(tool) {
					out = append(out, srcRule{r, layer, source, l.verdict})
				}
			}
		}
	}
	if p == nil {
		return out, nil
	}
	for _, c := range p.chats {
		if glob(c.pattern, s.ChatKey) {
			add(c.rules, LayerChat, "chat "+c.pattern)
		}
	}
	for _, r := range p.roles {
		if r.has(s.Identity) {
			add(r.rules, LayerRole, "role "+r.name)
		}
	}
	add(p.global, LayerGlobal, "global")
	return out, nil
}

// has reports whether identity is a member of the role. AnonymousAPI is
// a member only where it is written out.
func (r role) has(identity string) bool {
	if identity == "" {
		return false
	}
	for _, m := range r.members {
		if m == identity {
			return true
		}
		if identity != AnonymousAPI && strings.HasSuffix(m, "*") && strings.HasPrefix(identity, strings.TrimSuffix(m, "*")) {
			return true
		}
	}
	return false
}

// Roles returns the names of the roles identity is a member of, sorted.
func (p *Policy) Roles(identity string) []string {
	var out []string
	if p == nil {
		return out
	}
	for _, r := range p.roles {
		if r.has(identity) {
			out = append(out, r.name)
		}
	}
	return out
}

// CanApprove reports whether one of identity's roles has "approve": true.
func (p *Policy) CanApprove(identity string) bool {
	if p == nil {
		return false
	}
	for _, r := range p.roles {
		if r.approve && r.has(identity) {
			return true
		}
	}
	return false
}

// RoleMayApprove reports whether the named role exists and has "approve":
// true: what someone acting as that role (the web console) may do.
func (p *Policy) RoleMayApprove(name string) bool {
	if p == nil {
		return false
	}
	for _, r := range p.roles {
		if r.name == name {
			return r.approve
		}
	}
	return false
}

// ApproverRoles returns the names of the roles that may approve, sorted:
// what an approval request tells the chat about who can answer it.
func (p *Policy) ApproverRoles() []string {
	var out []string
	if p == nil {
		return out
	}
	for _, r := range p.roles {
		if r.approve {
			out = append(out, r.name)
		}
	}
	return out
}

// Rules lists the configured rules that apply to the subject and name the
// tool, highest layer first: the "why" behind Offered, for GET /api/tools.
func (p *Policy) Rules(s Subject, tool string) []Rule {
	rs, _ := p.applicable(s, tool, Narrowing{})
	out := make([]Rule, 0, len(rs))
	for _, r := range rs {
		out = append(out, Rule{Layer: r.layer, Source: r.source, Verdict: r.verdict, Text: r.text})
	}
	return out
}

// Offered reports whether the tool may be offered to the model at all:
// false when every call of it would be denied, that is when an applicable
// deny rule names the tool without an argument pattern, or when no
// applicable allow rule names it and its default is Deny (requireApproval
// rules never allow by themselves). Invalid request rules count as a deny.
func (p *Policy) Offered(s Subject, tool string, n Narrowing, def Verdict) bool {
	rs, err := p.applicable(s, tool, n)
	if err != nil {
		return false
	}
	allowed := def == Allow || def == RequireApproval
	for _, r := range rs {
		if r.verdict == Deny && !r.hasArg {
			return false
		}
		if r.verdict == Allow {
			allowed = true
		}
	}
	return allowed
}

// Decide resolves one call; see the package documentation for the rules.
// def is the tool's verdict when no rule decides (an invalid one counts
// as Deny). Invalid request rules and arguments over 64 KiB are denied.
func (p *Policy) Decide(s Subject, c Call, n Narrowing, def Verdict) Decision {
	if !def.valid() {
		def = Deny
	}
	rs, err := p.applicable(s, c.Tool, n)
	if err != nil {
		return Decision{Verdict: Deny, Layer: LayerRequest, Source: "request",
			Reason: fmt.Sprintf("%s is denied: %v", c.Tool, err)}
	}
	if len(c.Arg) > maxArgBytes {
		return Decision{Verdict: Deny, Layer: LayerDefault, Source: "default",
			Reason: fmt.Sprintf("%s is denied: its argument is longer than %d KiB", c.Tool, maxArgBytes>>10)}
	}
	if c.Arg != "" {
		if err := checkCommandWords(c.Arg); err != nil {
			// Whatever the rules: a command word the shell computes
			// could be anything, and no rule can be checked against it.
			return Decision{Verdict: Deny, Layer: LayerDefault, Source: "default",
				Reason: fmt.Sprintf("%s is denied: %v (no rule can be checked against what it runs; write the command out)", c.Tool, err)}
		}
	}
	cmd := parseCommand(c.Arg)

	// 1. Any deny rule of any layer that touches the call denies it.
	for _, r := range rs {
		if r.verdict != Deny {
			continue
		}
		if ok, hit := r.touches(cmd); ok {
			return decision(Deny, &r, fmt.Sprintf("%s is denied by %s%s", c.Tool, r.where(), matched(r, hit, cmd)))
		}
	}
	// 2. The highest requireApproval rule that touches the call.
	var appr *srcRule
	var apprHit string
	for i, r := range rs {
		if r.verdict == RequireApproval {
			if ok, hit := r.touches(cmd); ok {
				appr, apprHit = &rs[i], hit
				break
			}
		}
	}
	// 3. Every unit needs an allow (or an allowing default); a
	// requireApproval rule at the same or a higher layer than the allow
	// turns it into RequireApproval.
	var approval *Decision
	var allowedBy []string
	var first Decision
	for i, u := range cmd.units() {
		var best *srcRule
		for j := range rs {
			if rs[j].verdict == Allow && rs[j].covers(u) {
				best = &rs[j]
				break
			}
		}
		var d Decision
		switch {
		case best == nil && def == Deny:
			return defaultDeny(c.Tool, u, cmd, appr)
		case appr != nil && (best == nil || appr.layer.rank() >= best.layer.rank()):
			base := ""
			switch {
			case best != nil:
				base = fmt.Sprintf(" (allowed by %s)", best.where())
			case def == Allow:
				base = " (allowed by default)"
			}
			d = decision(RequireApproval, appr, fmt.Sprintf("%s needs approval: %s%s requires it%s",
				c.Tool, appr.where(), matched(*appr, apprHit, cmd), base))
		case best == nil && def == RequireApproval:
			d = Decision{Verdict: RequireApproval, Layer: LayerDefault, Source: "default",
				Reason: fmt.Sprintf("%s needs approval by default", c.Tool)}
		case best == nil:
			d = Decision{Verdict: Allow, Layer: LayerDefault, Source: "default", Reason: fmt.Sprintf("%s is allowed by default", c.Tool)}
			allowedBy = append(allowedBy, unitText(u, "by default"))
		default:
			d = decision(Allow, best, fmt.Sprintf("%s is allowed by %s", c.Tool, best.where()))
			allowedBy = append(allowedBy, unitText(u, "by "+best.where()))
		}
		if d.Verdict == RequireApproval && approval == nil {
			approval = &d
		}
		if i == 0 {
			first = d
		}
	}
	if approval != nil {
		return *approval
	}
	if len(allowedBy) > 1 {
		first.Reason = fmt.Sprintf("%s is allowed: %s", c.Tool, strings.Join(allowedBy, "; "))
	}
	return first
}

func decision(v Verdict, r *srcRule, reason string) Decision {
	return Decision{Verdict: v, Layer: r.layer, Source: r.source, Rule: r.text, Reason: reason}
}

func defaultDeny(tool string, u unit, cmd command, appr *srcRule) Decision {
	why := "no rule allows it"
	if cmd.present {
		why = fmt.Sprintf("no rule allows %q", clip(u.text))
	}
	if cmd.present && !u.safe {
		why += fmt.Sprintf(" (it has %s, which only a rule without an argument pattern can allow)", cmd.unsafe)
	}
	if appr != nil {
		why += fmt.Sprintf("; %s asks for approval, but requireApproval does not allow by itself", appr.where())
	}
	return Decision{Verdict: Deny, Layer: LayerDefault, Source: "default",
		Reason: fmt.Sprintf("%s is denied by default: %s", tool, why)}
}

// matched says which part of a command a pattern matched, when that is
// not the whole command.
func matched(r srcRule, hit string, cmd command) string {
	if !r.hasArg || hit == cmd.line {
		return ""
	}
	return fmt.Sprintf(" (matches %q)", clip(hit))
}

func unitText(u unit, by string) string {
	if u.text == "" {
		return by
	}
	return fmt.Sprintf("%q %s", clip(u.text), by)
}

// clip shortens text for a reason.
func clip(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}
