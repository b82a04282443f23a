package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
)

// Cluster mode: the store's state lives in a records.Table the replicas
// share, so an approval asked by a run on one replica is answered on
// whichever replica the answer reaches, and its grant is used by the run
// wherever it runs next.
//
// The layout is one record per approval ("approval:<code>") and one per
// call that holds grants ("grant:<hash of chat, tool and arguments>", a
// list, normally of one grant): one document for everything would outgrow
// a NATS message (arguments may be 256 KiB), and keying grants by the call
// makes UseGrant one read and one write rather than a scan. Every change
// is a compare-and-swap on the record's revision, so a decision, a grant
// use or an expiry happens once across the cluster, however many replicas
// race for it.

// sharedTimeout bounds each shared operation: the methods keep the file
// store's signatures (no context), and a table that cannot answer in this
// long is down for the caller anyway.
const sharedTimeout = 10 * time.Second

const (
	approvalPrefix = "approval:"
	grantPrefix    = "grant:"
)

// OpenShared returns a store kept in t, the cluster's shared table, instead
// of a file; it behaves as OpenStore's store, with these differences: Get
// and Pending report a table they cannot read as no approval; two replicas
// asking for the same call at the same instant may get two codes (either
// approval lets the call run); pruning happens when approvals are expired
// or requested rather than on every change.
func OpenShared(t records.Table, opt Options) *Store {
	return &Store{opt: opt.withDefaults(), table: t}
}

// sharedCtx bounds one shared operation.
func sharedCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), sharedTimeout)
}

// grantKey is the record of the grants for one call.
func grantKey(chatKey, tool string, args json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(chatKey))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(args)
	return grantPrefix + hex.EncodeToString(h.Sum(nil))
}

// storedApproval is an approval as listed, with what it takes to change or
// delete it.
type storedApproval struct {
	Approval
	rev uint64
}

// storedGrants is one call's grants as listed.
type storedGrants struct {
	key    string
	grants []Grant
	rev    uint64
}

// listShared reads every approval and grant record.
func (s *Store) listShared(ctx context.Context) ([]storedApproval, []storedGrants, error) {
	recs, err := s.table.List(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing approvals: %w", err)
	}
	var as []storedApproval
	var gs []storedGrants
	for _, r := range recs {
		switch {
		case strings.HasPrefix(r.Key, approvalPrefix):
			var a Approval
			if err := json.Unmarshal(r.Value, &a); err != nil {
				return nil, nil, fmt.Errorf("listing approvals: %s: %w", r.Key, err)
			}
			as = append(as, storedApproval{Approval: a, rev: r.Rev})
		case strings.HasPrefix(r.Key, grantPrefix):
			var g []Grant
			if err := json.Unmarshal(r.Value, &g); err != nil {
				return nil, nil, fmt.Errorf("listing approvals: %s: %w", r.Key, err)
			}
			gs = append(gs, storedGrants{key: r.Key, grants: g, rev: r.Rev})
		}
	}
	return as, gs, nil
}

// pruneShared deletes what the file store's prune drops: approvals
// decided or expired longer than Retain ago, and calls whose grants are
// all used or expired. A record changed meanwhile is left for the next
// time. It returns what is left of as.
func (s *Store) pruneShared(ctx context.Context, as []storedApproval, gs []storedGrants) ([]storedApproval, error) {
	now := s.opt.Now()
	var errs []error
	keep := as[:0]
	for _, a := range as {
		end := a.Decided
		if a.Status == StatusPending {
			end = a.Expires
		}
		if now.Sub(end) <= s.opt.Retain {
			keep = append(keep, a)
			continue
		}
		if err := s.table.Delete(ctx, approvalPrefix+a.Code, a.rev); err != nil && !errors.Is(err, records.ErrConflict) {
			errs = append(errs, err)
		}
	}
	for _, g := range gs {
		if len(liveGrants(g.grants, now)) > 0 {
			continue
		}
		if err := s.table.Delete(ctx, g.key, g.rev); err != nil && !errors.Is(err, records.ErrConflict) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return keep, fmt.Errorf("pruning approvals: %w", err)
	}
	return keep, nil
}

// liveGrants are the grants with uses left, before their expiry.
func liveGrants(gs []Grant, now time.Time) []Grant {
	var out []Grant
	for _, g := range gs {
		if g.Uses < g.MaxUses && now.Before(g.Expires) {
			out = append(out, g)
		}
	}
	return out
}

func (s *Store) sharedRequest(r ApprovalRequest, args, route json.RawMessage) (Approval, error) {
	ctx, cancel := sharedCtx()
	defer cancel()
	as, gs, err := s.listShared(ctx)
	if err != nil {
		return Approval{}, fmt.Errorf("requesting approval: %w", err)
	}
	if as, err = s.pruneShared(ctx, as, gs); err != nil {
		return Approval{}, fmt.Errorf("requesting approval: %w", err)
	}
	now := s.opt.Now()
	waiting := 0
	taken := make(map[string]bool, len(as))
	for _, a := range as {
		taken[a.Code] = true
		if a.Status != StatusPending || !now.Before(a.Expires) || a.ChatKey != r.ChatKey {
			continue
		}
		if a.Tool == r.Tool && string(a.ArgsJSON) == string(args) {
			return a.Approval, nil
		}
		waiting++
	}
	if waiting >= maxPendingPerChat || len(as) >= maxApprovals {
		return Approval{}, fmt.Errorf("approval request in %s: %w", r.ChatKey, ErrTooManyPending)
	}
	// A code another replica drew since the list is refused by the
	// create (revision 0), and another drawn.
	for range 10 {
		code, err := newCode(func(c string) bool { return taken[c] })
		if err != nil {
			return Approval{}, err
		}
		a := Approval{Code: code, ChatKey: r.ChatKey, Identity: r.Identity, Tool: r.Tool, Arg: r.Arg,
			ArgsJSON: args, Route: route, Status: StatusPending,
			Created: now, Expires: now.Add(s.opt.ApprovalTTL)}
		data, err := json.Marshal(a)
		if err != nil {
			return Approval{}, fmt.Errorf("requesting approval: %w", err)
		}
		_, err = s.table.Put(ctx, approvalPrefix+code, data, 0)
		if errors.Is(err, records.ErrConflict) {
			taken[code] = true
			continue
		}
		if err != nil {
			return Approval{}, fmt.Errorf("requesting approval: %w", err)
		}
		return a, nil
	}
	return Approval{}, errors.New("requesting approval: no free code")
}

// decideShared changes a pending approval as by decides it, once across
// the cluster: a decision that lost the race to another replica's sees the
// approval decided and is refused like a second /approve.
func (s *Store) decideShared(ctx context.Context, code string, by Approver, requesterMay bool, status Status) (Approval, error) {
	code = normCode(code)
	var out Approval
	err := records.Update(ctx, s.table, approvalPrefix+code, func(old []byte, exists bool) ([]byte, bool, error) {
		if !exists {
			return nil, false, fmt.Errorf("approval %q: %w", code, ErrUnknownCode)
		}
		var a Approval
		if err := json.Unmarshal(old, &a); err != nil {
			return nil, false, fmt.Errorf("reading approval %s: %w", code, err)
		}
		may := by.MayApprove || (requesterMay && by.Identity != "" && by.Identity == a.Identity)
		if err := s.checkDecidable(&a, by, may); err != nil {
			return nil, false, err
		}
		a.Status, a.DecidedBy, a.Decided = status, by.Identity, s.opt.Now()
		data, err := json.Marshal(a)
		out = a
		return data, false, err
	})
	return out, err
}

func (s *Store) sharedDeny(code string, by Approver) (Approval, error) {
	ctx, cancel := sharedCtx()
	defer cancel()
	return s.decideShared(ctx, code, by, true, StatusDenied)
}

// sharedApprove approves, then adds the grant to its call's record. Two
// writes, not one: when the second fails the approval is put back to
// pending (if nobody changed it meanwhile), so an approver who tries again
// is not told it was approved when nothing can run.
func (s *Store) sharedApprove(code string, by Approver) (Approval, Grant, error) {
	ctx, cancel := sharedCtx()
	defer cancel()
	a, err := s.decideShared(ctx, code, by, false, StatusApproved)
	if err != nil {
		return Approval{}, Grant{}, err
	}
	g := Grant{Code: a.Code, ChatKey: a.ChatKey, Tool: a.Tool, ArgsJSON: a.ArgsJSON, ApprovedBy: by.Identity,
		Created: a.Decided, Expires: a.Decided.Add(s.opt.GrantTTL), MaxUses: s.opt.GrantMaxUses}
	err = records.Update(ctx, s.table, grantKey(a.ChatKey, a.Tool, a.ArgsJSON), func(old []byte, exists bool) ([]byte, bool, error) {
		var gs []Grant
		if exists {
			if err := json.Unmarshal(old, &gs); err != nil {
				return nil, false, fmt.Errorf("reading grants: %w", err)
			}
		}
		data, err := json.Marshal(append(liveGrants(gs, s.opt.Now()), g))
		return data, false, err
	})
	if err == nil {
		return a, g, nil
	}
	rerr := records.Update(ctx, s.table, approvalPrefix+a.Code, func(old []byte, exists bool) ([]byte, bool, error) {
		var cur Approval
		if !exists || json.Unmarshal(old, &cur) != nil || cur.Status != StatusApproved || !cur.Decided.Equal(a.Decided) {
			return nil, false, errNoChange
		}
		cur.Status, cur.DecidedBy, cur.Decided = StatusPending, "", time.Time{}
		data, err := json.Marshal(cur)
		return data, false, err
	})
	if rerr != nil && !errors.Is(rerr, errNoChange) {
		err = errors.Join(err, fmt.Errorf("putting it back to pending: %w", rerr))
	}
	return Approval{}, Grant{}, fmt.Errorf("approval %s: recording its grant: %w", a.Code, err)
}

// sharedUseGrant counts the use in the call's record before it returns
// ok: of two replicas racing for the last use, the second's write finds
// the record changed, rereads it and finds no use left.
func (s *Store) sharedUseGrant(chatKey, tool string, args json.RawMessage) (Grant, bool, error) {
	ctx, cancel := sharedCtx()
	defer cancel()
	var used Grant
	err := records.Update(ctx, s.table, grantKey(chatKey, tool, args), func(old []byte, exists bool) ([]byte, bool, error) {
		if !exists {
			return nil, false, errNoChange
		}
		var gs []Grant
		if err := json.Unmarshal(old, &gs); err != nil {
			return nil, false, fmt.Errorf("reading grants: %w", err)
		}
		now := s.opt.Now()
		found := false
		for i := range gs {
			g := &gs[i]
			if g.ChatKey == chatKey && g.Tool == tool && string(g.ArgsJSON) == string(args) &&
				g.Uses < g.MaxUses && now.Before(g.Expires) {
				g.Uses++
				used, found = *g, true
				break
			}
		}
		if !found {
			return nil, false, errNoChange
		}
		// The record is written, never deleted, even when no use is left:
		// a delete of a record already gone succeeds, so two replicas
		// deleting it for the last use would both count it. Expire prunes
		// it later.
		left := liveGrants(gs, now)
		if len(left) == 0 {
			left = []Grant{used}
		}
		data, err := json.Marshal(left)
		return data, false, err
	})
	switch {
	case errors.Is(err, errNoChange):
		return Grant{}, false, nil
	case err != nil:
		return Grant{}, false, fmt.Errorf("using a grant: %w", err)
	}
	return used, true, nil
}

// sharedExpire marks each pending approval past its expiry as expired
// with a compare-and-swap, and returns those this call changed: replicas
// sweeping at once return each expiry once between them. It prunes too
// (the sweeper calls it at least every minute on every replica).
func (s *Store) sharedExpire() ([]Approval, error) {
	ctx, cancel := sharedCtx()
	defer cancel()
	as, gs, err := s.listShared(ctx)
	if err != nil {
		return nil, fmt.Errorf("expiring approvals: %w", err)
	}
	var out []Approval
	var errs []error
	now := s.opt.Now()
	for _, a := range as {
		if a.Status != StatusPending || now.Before(a.Expires) {
			continue
		}
		var expired Approval
		err := records.Update(ctx, s.table, approvalPrefix+a.Code, func(old []byte, exists bool) ([]byte, bool, error) {
			var cur Approval
			if !exists || json.Unmarshal(old, &cur) != nil || cur.Status != StatusPending {
				return nil, false, errNoChange
			}
			cur.Status, cur.Decided = StatusExpired, cur.Expires
			expired = cur
			data, err := json.Marshal(cur)
			return data, false, err
		})
		switch {
		case errors.Is(err, errNoChange):
		case err != nil:
			errs = append(errs, err)
		default:
			out = append(out, expired)
		}
	}
	if _, err := s.pruneShared(ctx, as, gs); err != nil {
		errs = append(errs, err)
	}
	sortByExpiry(out)
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("expiring approvals: %w", err)
	}
	return out, nil
}

func (s *Store) sharedGet(code string) (Approval, bool) {
	ctx, cancel := sharedCtx()
	defer cancel()
	r, err := s.table.Get(ctx, approvalPrefix+normCode(code))
	if err != nil {
		return Approval{}, false
	}
	var a Approval
	if json.Unmarshal(r.Value, &a) != nil {
		return Approval{}, false
	}
	return a, true
}

func (s *Store) sharedPending(chatKey string) []Approval {
	ctx, cancel := sharedCtx()
	defer cancel()
	as, _, err := s.listShared(ctx)
	if err != nil {
		return nil
	}
	now := s.opt.Now()
	var out []Approval
	for _, a := range as {
		if a.Status == StatusPending && now.Before(a.Expires) && (chatKey == "" || a.ChatKey == chatKey) {
			out = append(out, a.Approval)
		}
	}
	sortApprovals(out)
	return out
}
