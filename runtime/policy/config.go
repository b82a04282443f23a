package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// ErrConfig is wrapped by every error Parse and ParseNarrowing return.
var ErrConfig = errors.New("tools config")

// Default limits, used when the configuration leaves them out.
const (
	DefaultApprovalTTL  = 10 * time.Minute
	DefaultGrantTTL     = 10 * time.Minute
	DefaultGrantMaxUses = 1
	maxTTL              = 7 * 24 * time.Hour
	maxGrantUses        = 1000
)

// Policy is a parsed tools configuration. It is immutable and safe for
// concurrent use; a nil *Policy behaves as an empty one (every call gets
// the caller's default).
type Policy struct {
	global       ruleSet
	roles        []role      // sorted by name
	chats        []chatEntry // sorted by pattern
	approvalTTL  time.Duration
	grantTTL     time.Duration
	grantMaxUses int
}

type ruleSet struct{ allow, deny, approval []rule }

type role struct {
	name    string
	members []string
	approve bool
	rules   ruleSet
}

type chatEntry struct {
	pattern string
	rules   ruleSet
}

// Parse reads the "tools" object of ship.json. Empty input or null gives
// an empty policy. Parsing is strict: an unknown field, a value of the
// wrong type, a malformed rule or member is an error (wrapping ErrConfig)
// that names its place, like `tools.roles.admin: unknown field "aprove"`.
func Parse(raw json.RawMessage) (*Policy, error) {
	p := &Policy{approvalTTL: DefaultApprovalTTL, grantTTL: DefaultGrantTTL, grantMaxUses: DefaultGrantMaxUses}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return p, nil
	}
	fields, err := object(raw, "tools", "allow", "deny", "requireApproval", "roles", "chats",
		"approvalTTLSeconds", "grantTTLSeconds", "grantMaxUses")
	if err != nil {
		return nil, err
	}
	if p.global, err = rules(fields, "tools"); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"approvalTTLSeconds", &p.approvalTTL}, {"grantTTLSeconds", &p.grantTTL}} {
		if v, ok := fields[f.name]; ok {
			n, err := number(v, "tools."+f.name, int(maxTTL/time.Second))
			if err != nil {
				return nil, err
			}
			*f.dst = time.Duration(n) * time.Second
		}
	}
	if v, ok := fields["grantMaxUses"]; ok {
		if p.grantMaxUses, err = number(v, "tools.grantMaxUses", maxGrantUses); err != nil {
			return nil, err
		}
	}
	if p.roles, err = parseRoles(fields["roles"]); err != nil {
		return nil, err
	}
	if p.chats, err = parseChats(fields["chats"]); err != nil {
		return nil, err
	}
	return p, nil
}

func parseRoles(raw json.RawMessage) ([]role, error) {
	entries, err := entries(raw, "tools.roles")
	if err != nil {
		return nil, err
	}
	var out []role
	for _, name := range sortedKeys(entries) {
		where := "tools.roles." + name
		if !validRoleName(name) {
			return nil, fmt.Errorf("%w: tools.roles: role name %q: use letters, digits, _ and -", ErrConfig, name)
		}
		fields, err := object(entries[name], where, "members", "allow", "deny", "requireApproval", "approve")
		if err != nil {
			return nil, err
		}
		r := role{name: name}
		if r.rules, err = rules(fields, where); err != nil {
			return nil, err
		}
		if r.members, err = stringList(fields["members"], where+".members"); err != nil {
			return nil, err
		}
		for i, m := range r.members {
			if err := checkMember(m); err != nil {
				return nil, fmt.Errorf("%w: %s.members[%d] %q: %w", ErrConfig, where, i, m, err)
			}
		}
		if v, ok := fields["approve"]; ok {
			if err := json.Unmarshal(v, &r.approve); err != nil {
				return nil, fmt.Errorf("%w: %s.approve: must be true or false", ErrConfig, where)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func parseChats(raw json.RawMessage) ([]chatEntry, error) {
	entries, err := entries(raw, "tools.chats")
	if err != nil {
		return nil, err
	}
	var out []chatEntry
	for _, pattern := range sortedKeys(entries) {
		where := "tools.chats." + pattern
		if strings.TrimSpace(pattern) != pattern || pattern == "" {
			return nil, fmt.Errorf("%w: tools.chats: chat pattern %q: empty or surrounded by blanks", ErrConfig, pattern)
		}
		if _, bad := controlChar(pattern); bad || strings.ContainsAny(pattern, "\t\n\r") {
			return nil, fmt.Errorf("%w: tools.chats: chat pattern %q: control character", ErrConfig, pattern)
		}
		fields, err := object(entries[pattern], where, "allow", "deny", "requireApproval")
		if err != nil {
			return nil, err
		}
		rs, err := rules(fields, where)
		if err != nil {
			return nil, err
		}
		out = append(out, chatEntry{pattern: pattern, rules: rs})
	}
	return out, nil
}

// checkMember accepts "channel:userId", where the user id may end in one
// "*" ("api:*", "telegram:12*").
func checkMember(m string) error {
	ch, user, ok := strings.Cut(m, ":")
	if !ok || ch == "" {
		return errors.New(`want "channel:userId", like "telegram:123456" or "api:*"`)
	}
	for _, c := range ch {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("channel %q: use lower-case letters, digits, _ and -", ch)
		}
	}
	if user == "" {
		return errors.New(`empty user id (write "` + ch + `:*" for everyone on ` + ch + `)`)
	}
	if i := strings.IndexAny(user, "*?"); i >= 0 && i != len(user)-1 || strings.Contains(user, "?") {
		return errors.New(`only a trailing "*" is allowed as a wildcard`)
	}
	if strings.ContainsAny(user, " \t\n\r") {
		return errors.New("blank in the user id")
	}
	if c, bad := controlChar(user); bad {
		return fmt.Errorf("control character %q in the user id", c)
	}
	return nil
}

func validRoleName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// rules reads the allow, deny and requireApproval lists of one object.
func rules(fields map[string]json.RawMessage, where string) (ruleSet, error) {
	var rs ruleSet
	for _, l := range []struct {
		name string
		dst  *[]rule
	}{{"allow", &rs.allow}, {"deny", &rs.deny}, {"requireApproval", &rs.approval}} {
		list, err := stringList(fields[l.name], where+"."+l.name)
		if err != nil {
			return rs, err
		}
		if *l.dst, err = ruleList(list, where+"."+l.name); err != nil {
			return rs, err
		}
		if l.name != "allow" {
			continue
		}
		for i, r := range rs.allow {
			if r.hasArg && r.formErr != nil {
				return rs, fmt.Errorf("%w: %s.allow[%d]: %q can never allow a command: its pattern has %v", ErrConfig, where, i, r.text, r.formErr)
			}
		}
	}
	return rs, nil
}

func ruleList(list []string, where string) ([]rule, error) {
	out := make([]rule, 0, len(list))
	for i, s := range list {
		r, err := parseRule(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s[%d]: %w", ErrConfig, where, i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// object decodes a JSON object and refuses fields other than known.
func object(raw json.RawMessage, where string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%w: %s: must be an object", ErrConfig, where)
	}
	for _, k := range sortedKeys(m) {
		if !contains(known, k) {
			msg := fmt.Sprintf("%s: unknown field %q", where, k)
			if s := suggest(k, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return nil, fmt.Errorf("%w: %s; known fields: %s", ErrConfig, msg, strings.Join(known, ", "))
		}
	}
	return m, nil
}

// entries decodes an optional object of named entries.
func entries(raw json.RawMessage, where string) (map[string]json.RawMessage, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: must be an object", ErrConfig, where)
	}
	return m, nil
}

func stringList(raw json.RawMessage, where string) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%w: %s: must be a list of strings", ErrConfig, where)
	}
	return list, nil
}

func number(raw json.RawMessage, where string, max int) (int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("%w: %s: must be a whole number from 1 to %d", ErrConfig, where, max)
	}
	return n, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest finds a known field within two edits of k, ignoring case.
func suggest(k string, known []string) string {
	for _, c := range known {
		if distance(strings.ToLower(k), strings.ToLower(c)) <= 2 {
			return c
		}
	}
	return ""
}

// distance is the Levenshtein distance of two short strings.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// StoreOptions returns the approval and grant limits of the policy, ready
// for OpenStore (set Now for tests).
func (p *Policy) StoreOptions() Options {
	if p == nil {
		return Options{}
	}
	return Options{ApprovalTTL: p.approvalTTL, GrantTTL: p.grantTTL, GrantMaxUses: p.grantMaxUses}
}
