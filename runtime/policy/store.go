package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
)

// Errors Approve, Deny and Request return, wrapped with the code; turn
// them into a reply with errors.Is.
var (
	ErrUnknownCode     = errors.New("no such approval code")
	ErrExpired         = errors.New("the approval expired")
	ErrAlreadyApproved = errors.New("already approved")
	ErrAlreadyDenied   = errors.New("already denied")
	ErrWrongChat       = errors.New("the approval belongs to another chat")
	ErrNotApprover     = errors.New("not allowed to approve")
	ErrTooManyPending  = errors.New("too many approvals waiting")
	ErrInvalidRequest  = errors.New("invalid approval request")
)

// Limits that keep the store small.
const (
	DefaultRetain     = 24 * time.Hour
	maxPendingPerChat = 20
	maxApprovals      = 5000
	maxArgsJSONBytes  = 256 << 10
	maxRouteBytes     = 16 << 10
)

// Options tune a Store; zero fields take the defaults. Policy.StoreOptions
// fills the TTLs and uses from ship.json.
type Options struct {
	ApprovalTTL  time.Duration // how long an approval waits; DefaultApprovalTTL
	GrantTTL     time.Duration // how long a grant lives once approved; DefaultGrantTTL
	GrantMaxUses int           // calls one grant allows; DefaultGrantMaxUses
	// Retain is how long a decided or expired approval is kept, so a late
	// "/approve" hears "already approved" rather than "unknown code";
	// DefaultRetain. A pending approval that nobody collected with Expire
	// is dropped Retain after it expired.
	Retain time.Duration
	Now    func() time.Time // the clock; time.Now
}

// Status is where an approval stands.
type Status string

// The statuses.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusDenied   Status = "denied"
	StatusExpired  Status = "expired"
)

// ApprovalRequest asks a human to approve one tool call.
type ApprovalRequest struct {
	ChatKey  string          // the chat the call ran in; approvals are decided there
	Identity string          // who asked ("channel:userId")
	Tool     string          // the tool
	Arg      string          // its command-like argument, to show the approver
	ArgsJSON json.RawMessage // the exact tool arguments the grant will cover ("" means {})
	Route    json.RawMessage // opaque routing data for the caller (where to reply); kept as JSON, compacted
}

// Approval is a request for approval and its outcome.
type Approval struct {
	Code      string          `json:"code"`
	ChatKey   string          `json:"chatKey"`
	Identity  string          `json:"identity"`
	Tool      string          `json:"tool"`
	Arg       string          `json:"arg,omitempty"`
	ArgsJSON  json.RawMessage `json:"args"`
	Route     json.RawMessage `json:"route,omitempty"`
	Status    Status          `json:"status"`
	Created   time.Time       `json:"created"`
	Expires   time.Time       `json:"expires"`
	DecidedBy string          `json:"decidedBy,omitempty"` // who approved or denied
	Decided   time.Time       `json:"decided,omitzero"`    // when it was approved, denied or expired
}

// Grant lets exactly one call (chat, tool and arguments) run, up to
// MaxUses times until Expires.
type Grant struct {
	Code       string          `json:"code"` // the approval it came from
	ChatKey    string          `json:"chatKey"`
	Tool       string          `json:"tool"`
	ArgsJSON   json.RawMessage `json:"args"`
	ApprovedBy string          `json:"approvedBy"`
	Created    time.Time       `json:"created"`
	Expires    time.Time       `json:"expires"`
	MaxUses    int             `json:"maxUses"`
	Uses       int             `json:"uses"`
}

// Approver is who answers an approval, and where.
type Approver struct {
	Identity string // "channel:userId"
	ChatKey  string // the chat the answer came from
	// MayApprove says whether Identity may approve, normally
	// Policy.CanApprove(Identity). Deny also accepts the requester.
	MayApprove bool
}

// Store holds pending approvals and grants in one JSON file, replaced
// atomically on every change, so both survive a restart; or, in cluster
// mode (OpenShared), in a records.Table every replica shares. It is safe
// for concurrent use.
type Store struct {
	path string
	opt  Options
	mu   sync.Mutex
	st   state
	// table, when set, holds the state instead of path and st.
	table records.Table
}

// withDefaults fills the zero fields.
func (opt Options) withDefaults() Options {
	if opt.ApprovalTTL <= 0 {
		opt.ApprovalTTL = DefaultApprovalTTL
	}
	if opt.GrantTTL <= 0 {
		opt.GrantTTL = DefaultGrantTTL
	}
	if opt.GrantMaxUses <= 0 {
		opt.GrantMaxUses = DefaultGrantMaxUses
	}
	if opt.Retain <= 0 {
		opt.Retain = DefaultRetain
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return opt
}

// OpenStore loads the store at path, creating it if missing.
func OpenStore(path string, opt Options) (*Store, error) {
	s := &Store{path: path, opt: opt.withDefaults()}
	st, err := load(path)
	if err != nil {
		return nil, err
	}
	s.st = st
	// The file is written only when loading pruned something: an fsync
	// here would cost every start-up a few milliseconds. The folder is made
	// now, so a path that can never be written fails at start.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening approvals: %w", err)
	}
	if err := s.update(func(*state) error { return errNoChange }); err != nil && !errors.Is(err, errNoChange) {
		return nil, err
	}
	return s, nil
}

// Request records a pending approval with a fresh code (six characters
// without 0, O, 1 or I; any case is accepted back) that expires after the
// approval TTL. A live pending approval for the same chat, tool and
// arguments is returned instead of a new one. At most 20 approvals wait
// per chat (ErrTooManyPending).
func (s *Store) Request(r ApprovalRequest) (Approval, error) {
	if r.ChatKey == "" || r.Identity == "" || r.Tool == "" {
		return Approval{}, fmt.Errorf("%w: chat, identity and tool are required", ErrInvalidRequest)
	}
	args, err := canonicalArgs(r.ArgsJSON)
	if err != nil {
		return Approval{}, err
	}
	var route json.RawMessage
	if len(r.Route) > 0 {
		var buf bytes.Buffer
		if len(r.Route) > maxRouteBytes || json.Compact(&buf, r.Route) != nil {
			return Approval{}, fmt.Errorf("%w: route must be JSON under %d KiB", ErrInvalidRequest, maxRouteBytes>>10)
		}
		route = buf.Bytes()
	}
	if s.table != nil {
		return s.sharedRequest(r, args, route)
	}
	var out Approval
	err = s.update(func(st *state) error {
		now := s.opt.Now()
		waiting := 0
		for _, a := range st.approvals {
			if a.Status != StatusPending || !now.Before(a.Expires) || a.ChatKey != r.ChatKey {
				continue
			}
			if a.Tool == r.Tool && string(a.ArgsJSON) == string(args) {
				out = *a
				return errNoChange
			}
			waiting++
		}
		if waiting >= maxPendingPerChat || len(st.approvals) >= maxApprovals {
			return fmt.Errorf("approval request in %s: %w", r.ChatKey, ErrTooManyPending)
		}
		code, err := newCode(func(c string) bool { _, taken := st.approvals[c]; return taken })
		if err != nil {
			return err
		}
		a := &Approval{Code: code, ChatKey: r.ChatKey, Identity: r.Identity, Tool: r.Tool, Arg: r.Arg,
			ArgsJSON: args, Route: route, Status: StatusPending,
			Created: now, Expires: now.Add(s.opt.ApprovalTTL)}
		st.approvals[code] = a
		out = *a
		return nil
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	return out, err
}

// Approve approves a pending approval and returns it with the grant that
// lets its call run. It refuses an unknown code (ErrUnknownCode), an
// approval of another chat (ErrWrongChat), an approver who may not
// approve (ErrNotApprover), one already decided (ErrAlreadyApproved,
// ErrAlreadyDenied) or past its expiry (ErrExpired), checked in that order.
// Requesters who may approve can approve their own request.
func (s *Store) Approve(code string, by Approver) (Approval, Grant, error) {
	if s.table != nil {
		return s.sharedApprove(code, by)
	}
	var a Approval
	var g Grant
	err := s.update(func(st *state) error {
		p, err := s.decidable(st, code, by, by.MayApprove)
		if err != nil {
			return err
		}
		now := s.opt.Now()
		p.Status, p.DecidedBy, p.Decided = StatusApproved, by.Identity, now
		ng := &Grant{Code: p.Code, ChatKey: p.ChatKey, Tool: p.Tool, ArgsJSON: p.ArgsJSON, ApprovedBy: by.Identity,
			Created: now, Expires: now.Add(s.opt.GrantTTL), MaxUses: s.opt.GrantMaxUses}
		st.grants = append(st.grants, ng)
		a, g = *p, *ng
		return nil
	})
	return a, g, err
}

// Deny refuses a pending approval. Approvers may deny, and so may the
// requester (withdrawing the request); it refuses like Approve.
func (s *Store) Deny(code string, by Approver) (Approval, error) {
	if s.table != nil {
		return s.sharedDeny(code, by)
	}
	var a Approval
	err := s.update(func(st *state) error {
		may := by.MayApprove
		if p, ok := st.approvals[normCode(code)]; ok && by.Identity != "" && by.Identity == p.Identity {
			may = true
		}
		p, err := s.decidable(st, code, by, may)
		if err != nil {
			return err
		}
		p.Status, p.DecidedBy, p.Decided = StatusDenied, by.Identity, s.opt.Now()
		a = *p
		return nil
	})
	return a, err
}

// decidable finds a pending approval the approver may decide.
func (s *Store) decidable(st *state, code string, by Approver, may bool) (*Approval, error) {
	code = normCode(code)
	p, ok := st.approvals[code]
	if !ok {
		return nil, fmt.Errorf("approval %q: %w", code, ErrUnknownCode)
	}
	if err := s.checkDecidable(p, by, may); err != nil {
		return nil, err
	}
	return p, nil
}

// checkDecidable says why the approver may not decide p, if they may not.
func (s *Store) checkDecidable(p *Approval, by Approver, may bool) error {
	code := p.Code
	switch {
	case p.ChatKey != by.ChatKey:
		return fmt.Errorf("approval %s: %w", code, ErrWrongChat)
	case !may:
		return fmt.Errorf("approval %s: %s: %w", code, by.Identity, ErrNotApprover)
	case p.Status == StatusApproved:
		return fmt.Errorf("approval %s: %w", code, ErrAlreadyApproved)
	case p.Status == StatusDenied:
		return fmt.Errorf("approval %s: %w", code, ErrAlreadyDenied)
	case p.Status == StatusExpired || !s.opt.Now().Before(p.Expires):
		return fmt.Errorf("approval %s: %w", code, ErrExpired)
	}
	return nil
}

// UseGrant consumes one use of a live grant for exactly this call (chat,
// tool and arguments, compared as JSON values) and returns the grant as
// used. The use is persisted before ok is true, so a crash cannot give a
// use twice. ok is false when no grant covers the call, and also, with an
// error, when the use could not be recorded. Call it only for a call
// Decide says needs approval: a grant never lifts a Deny.
func (s *Store) UseGrant(chatKey, tool string, argsJSON json.RawMessage) (g Grant, ok bool, err error) {
	args, cerr := canonicalArgs(argsJSON)
	if cerr != nil {
		return Grant{}, false, nil
	}
	if s.table != nil {
		return s.sharedUseGrant(chatKey, tool, args)
	}
	err = s.update(func(st *state) error {
		now := s.opt.Now()
		for _, cand := range st.grants {
			if cand.ChatKey == chatKey && cand.Tool == tool && string(cand.ArgsJSON) == string(args) &&
				cand.Uses < cand.MaxUses && now.Before(cand.Expires) {
				cand.Uses++
				g = *cand
				return nil
			}
		}
		return errNoChange
	})
	switch {
	case errors.Is(err, errNoChange):
		return Grant{}, false, nil
	case err != nil:
		return Grant{}, false, err
	}
	return g, true, nil
}

// Expire marks the pending approvals whose time is up as expired and
// returns them, oldest expiry first. The change is persisted before it
// returns, so each expiry is returned once, also across restarts (at
// most once: a crash right after loses the notice, never repeats it).
func (s *Store) Expire() ([]Approval, error) {
	if s.table != nil {
		return s.sharedExpire()
	}
	var out []Approval
	err := s.update(func(st *state) error {
		now := s.opt.Now()
		for _, a := range st.approvals {
			if a.Status == StatusPending && !now.Before(a.Expires) {
				a.Status, a.Decided = StatusExpired, a.Expires
				out = append(out, *a)
			}
		}
		if len(out) == 0 {
			return errNoChange
		}
		return nil
	})
	if errors.Is(err, errNoChange) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sortByExpiry(out)
	return out, nil
}

func sortByExpiry(out []Approval) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Expires.Equal(out[j].Expires) {
			return out[i].Expires.Before(out[j].Expires)
		}
		return out[i].Code < out[j].Code
	})
}

// Get returns the approval with this code, in any status.
func (s *Store) Get(code string) (Approval, bool) {
	if s.table != nil {
		return s.sharedGet(code)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.st.approvals[normCode(code)]
	if !ok {
		return Approval{}, false
	}
	return *a, true
}

// Pending lists the approvals still waiting (not past their expiry) in a
// chat, or in all chats for "", oldest first.
func (s *Store) Pending(chatKey string) []Approval {
	if s.table != nil {
		return s.sharedPending(chatKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Now()
	var out []Approval
	for _, a := range s.st.approvals {
		if a.Status == StatusPending && now.Before(a.Expires) && (chatKey == "" || a.ChatKey == chatKey) {
			out = append(out, *a)
		}
	}
	sortApprovals(out)
	return out
}

// newCode draws a code not taken by any approval the store still holds.
func newCode(taken func(code string) bool) (string, error) {
	for range 100 {
		if c := records.Code(6); !taken(c) {
			return c, nil
		}
	}
	return "", errors.New("drawing an approval code: no free code")
}

// normCode accepts a code as typed: blanks around it and any case.
func normCode(code string) string { return records.NormCode(code) }
