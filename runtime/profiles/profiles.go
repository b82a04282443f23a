// Package profiles routes each message to an agent profile (agents.<name>
// in ship.json): a prompt, a model and a narrowing of the tool policy.
// A message names one explicitly ("/agent coder …" or "@coder …"), else
// its chat is bound to one by a chat-key glob, else the default answers.
package profiles

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/shipmyagent/ship/runtime/policy"
)

// DefaultName is the profile that answers when nothing else is chosen.
// Without an agents.default entry it changes nothing: Agent.md, the chat's
// model and the tool policy as they are.
const DefaultName = "default"

// Reasons of a decision (route_decided's reason); a bound one is
// BoundPrefix followed by the glob that matched.
const (
	ReasonExplicit = "explicit"
	ReasonDefault  = "default"
	BoundPrefix    = "bound:"
)

// Profile is one agents.<name> entry, ready to use.
type Profile struct {
	Name string
	// Prompt replaces Agent.md's text in the stable part of the system
	// prompt; "" keeps Agent.md.
	Prompt string
	// Model is a name of llm.models; "" keeps the chat's model.
	Model string
	// Tools narrows the tool policy for this profile's runs.
	Tools policy.Narrowing
	// Chats are chat-key globs bound to this profile.
	Chats []string
}

// Decision is which profile answers one message and why.
type Decision struct {
	Profile Profile
	// Reason is "explicit", "bound:<glob>" or "default".
	Reason string
	// Text is the message without the "/agent NAME" or "@NAME" that
	// picked the profile.
	Text string
}

// binding is one chat glob and the profile it names.
type binding struct {
	glob    string
	profile string
}

// Set is the configured profiles. The zero value and nil route every
// message to an empty default profile.
type Set struct {
	byName   map[string]Profile
	bindings []binding // most specific first
}

// New checks the profiles and builds a Set: names are letters, digits,
// "_" and "-"; a glob is bound to one profile only.
func New(ps []Profile) (*Set, error) {
	s := &Set{byName: map[string]Profile{}}
	owner := map[string]string{}
	for _, p := range ps {
		if err := CheckName(p.Name); err != nil {
			return nil, err
		}
		if _, dup := s.byName[p.Name]; dup {
			return nil, fmt.Errorf("agents: profile %q is listed twice", p.Name)
		}
		if err := p.Tools.Validate(); err != nil {
			return nil, fmt.Errorf("agents.%s.tools: %w", p.Name, err)
		}
		for _, g := range p.Chats {
			if err := CheckGlob(g); err != nil {
				return nil, fmt.Errorf("agents.%s.chats: %w", p.Name, err)
			}
			if o, dup := owner[g]; dup {
				return nil, fmt.Errorf("agents.%s.chats: %q is already bound to agent %q; a chat glob names one agent", p.Name, g, o)
			}
			owner[g] = p.Name
			s.bindings = append(s.bindings, binding{glob: g, profile: p.Name})
		}
		s.byName[p.Name] = p
	}
	// The most specific glob wins: the one with the most literal
	// characters ("telegram:chat:-1001" before "telegram:*").
	slices.SortFunc(s.bindings, func(a, b binding) int {
		if d := literals(b.glob) - literals(a.glob); d != 0 {
			return d
		}
		return strings.Compare(a.glob, b.glob)
	})
	return s, nil
}

// CheckName accepts a profile name usable after "/agent " and "@".
func CheckName(name string) error {
	if name == "" {
		return errors.New("agents: a profile needs a name")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("agents: profile name %q: only letters, digits, _ and - are allowed (it is typed after /agent and @)", name)
		}
	}
	return nil
}

// CheckGlob accepts a chat-key glob: not empty, no blanks or control
// characters, * (any run) and ? (one character) as the only wildcards.
func CheckGlob(g string) error {
	switch {
	case g == "" || strings.TrimSpace(g) != g:
		return fmt.Errorf("chat glob %q: empty or surrounded by blanks", g)
	case strings.ContainsFunc(g, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		return fmt.Errorf("chat glob %q: blanks and control characters cannot be in a chat key", g)
	case strings.ContainsAny(g, "[]{}\\"):
		return fmt.Errorf("chat glob %q: only * and ? are wildcards (like \"telegram:chat:-100*\")", g)
	}
	return nil
}

// Len is how many profiles are configured.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byName)
}

// Names lists the profiles, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.byName))
	for n := range s.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Get returns the profile called name. "default" always exists: without
// an agents.default entry it is the empty profile (today's behaviour).
func (s *Set) Get(name string) (Profile, bool) {
	var p Profile
	ok := false
	if s != nil {
		p, ok = s.byName[name]
	}
	if !ok && name == DefaultName {
		return Profile{Name: DefaultName}, true
	}
	return p, ok
}

// Route decides which profile answers text in chatKey.
func (s *Set) Route(chatKey, text string) Decision {
	if name, rest, ok := Explicit(text); ok {
		if p, ok := s.Get(name); ok {
			return Decision{Profile: p, Reason: ReasonExplicit, Text: rest}
		}
	}
	if s != nil {
		for _, b := range s.bindings {
			if glob(b.glob, chatKey) {
				return Decision{Profile: s.byName[b.profile], Reason: BoundPrefix + b.glob, Text: text}
			}
		}
	}
	p, _ := s.Get(DefaultName)
	return Decision{Profile: p, Reason: ReasonDefault, Text: text}
}

// Explicit reads "/agent NAME rest" (also "/agent@bot NAME rest", as
// Telegram writes commands in groups) or "@NAME rest" at the start of
// text. It does not know whether NAME is a profile.
func Explicit(text string) (name, rest string, ok bool) {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	switch {
	case strings.HasPrefix(t, "/agent"):
		cmd, after, _ := strings.Cut(t, " ")
		if cmd != "/agent" && !strings.HasPrefix(cmd, "/agent@") {
			return "", "", false // "/agents", "/agentx"
		}
		after = strings.TrimLeftFunc(after, unicode.IsSpace)
		name, rest, _ = strings.Cut(after, " ")
	case strings.HasPrefix(t, "@"):
		name, rest, _ = strings.Cut(t[1:], " ")
	default:
		return "", "", false
	}
	// A line break may end the name too.
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, rest = name[:i], name[i+1:]+" "+rest
	}
	if name == "" || CheckName(name) != nil {
		return "", "", false
	}
	return name, strings.TrimSpace(rest), true
}

// literals counts the characters of g that are not wildcards.
func literals(g string) int {
	return len(g) - strings.Count(g, "*") - strings.Count(g, "?")
}

// glob matches s against pattern: * is any run of characters, ? one.
func glob(pattern, s string) bool {
	p, r := []rune(pattern), []rune(s)
	// Classic two-pointer match with backtracking to the last star.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(r) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == r[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
