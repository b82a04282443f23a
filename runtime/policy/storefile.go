package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/renameio/v2"
)

// errNoChange tells update that nothing needs writing.
var errNoChange = errors.New("no change")

// state is everything the store holds.
type state struct {
	approvals map[string]*Approval // by code
	grants    []*Grant
}

// storeFile is the file format.
type storeFile struct {
	Version   int        `json:"version"`
	Approvals []Approval `json:"approvals"`
	Grants    []Grant    `json:"grants"`
}

const storeVersion = 1

func (st state) clone() state {
	c := state{approvals: make(map[string]*Approval, len(st.approvals)), grants: make([]*Grant, 0, len(st.grants))}
	for k, a := range st.approvals {
		cp := *a
		c.approvals[k] = &cp
	}
	for _, g := range st.grants {
		cp := *g
		c.grants = append(c.grants, &cp)
	}
	return c
}

// update applies fn to a copy of the state, prunes it, writes it and only
// then makes it the store's state: memory never runs ahead of the file.
// fn returning errNoChange skips the write, unless pruning removed
// something.
func (s *Store) update(fn func(st *state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.clone()
	ferr := fn(&next)
	if ferr != nil && !errors.Is(ferr, errNoChange) {
		return ferr
	}
	pruned := s.prune(&next)
	if errors.Is(ferr, errNoChange) && !pruned {
		return ferr
	}
	if err := s.write(next); err != nil {
		return err
	}
	s.st = next
	return ferr
}

// prune drops used or expired grants, and approvals decided (or expired)
// longer than Retain ago; it reports whether it dropped anything.
func (s *Store) prune(st *state) bool {
	now := s.opt.Now()
	changed := false
	keep := st.grants[:0]
	for _, g := range st.grants {
		if g.Uses < g.MaxUses && now.Before(g.Expires) {
			keep = append(keep, g)
		} else {
			changed = true
		}
	}
	st.grants = keep
	for code, a := range st.approvals {
		end := a.Decided
		if a.Status == StatusPending {
			end = a.Expires
		}
		if now.Sub(end) > s.opt.Retain {
			delete(st.approvals, code)
			changed = true
		}
	}
	return changed
}

// write replaces the file atomically (renameio: write, fsync, rename).
func (s *Store) write(st state) error {
	f := storeFile{Version: storeVersion, Approvals: make([]Approval, 0, len(st.approvals)), Grants: make([]Grant, 0, len(st.grants))}
	for _, a := range st.approvals {
		f.Approvals = append(f.Approvals, *a)
	}
	sortApprovals(f.Approvals)
	for _, g := range st.grants {
		f.Grants = append(f.Grants, *g)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	if err := renameio.WriteFile(s.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	return nil
}

// load reads the file; a missing file is an empty store.
func load(path string) (state, error) {
	st := state{approvals: map[string]*Approval{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading approvals: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(data, &f); err != nil {
		return st, fmt.Errorf("reading approvals %s: %w", path, err)
	}
	if f.Version != storeVersion {
		return st, fmt.Errorf("reading approvals %s: unknown version %d", path, f.Version)
	}
	for i := range f.Approvals {
		a := f.Approvals[i]
		if a.ArgsJSON, err = canonicalArgs(a.ArgsJSON); err != nil {
			return st, fmt.Errorf("reading approvals %s: approval %s: %w", path, a.Code, err)
		}
		st.approvals[a.Code] = &a
	}
	for i := range f.Grants {
		g := f.Grants[i]
		if g.ArgsJSON, err = canonicalArgs(g.ArgsJSON); err != nil {
			return st, fmt.Errorf("reading approvals %s: grant %s: %w", path, g.Code, err)
		}
		st.grants = append(st.grants, &g)
	}
	return st, nil
}

func sortApprovals(as []Approval) {
	sort.Slice(as, func(i, j int) bool {
		if !as[i].Created.Equal(as[j].Created) {
			return as[i].Created.Before(as[j].Created)
		}
		return as[i].Code < as[j].Code
	})
}

// canonicalArgs returns tool arguments in one canonical form (keys sorted,
// no blanks), so the same arguments compare equal however the model spaced
// or ordered them. Empty means {}. Arguments with a duplicate key are
// refused: an approver must see exactly what will run, and parsers
// disagree on which duplicate wins.
func canonicalArgs(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	if len(raw) > maxArgsJSONBytes {
		return nil, fmt.Errorf("%w: arguments over %d KiB", ErrInvalidRequest, maxArgsJSONBytes>>10)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("data after the value")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: arguments: %w", ErrInvalidRequest, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: arguments: %w", ErrInvalidRequest, err)
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// jsonValue reads one JSON value, refusing duplicate keys.
func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 100 {
		return nil, errors.New("nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			if m[k], err = jsonValue(dec, depth+1); err != nil {
				return nil, err
			}
		}
		_, err = dec.Token()
		return m, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := jsonValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}
