package policy

import (
	"errors"
	"path"
	"strings"
)

// dotdot stands for a ".." path segment in the form allow patterns are
// matched in (allowForm). glob's wildcards never match it, so only a
// pattern that spells ".." out matches a path that climbs. NUL never
// occurs in an argument that gets this far (a control character makes a
// command unsafe) nor in a rule (parseRule refuses control characters).
const dotdot = '\x00'

// The reasons a simple command has no allow form: what the shell would
// make of it is not in its text, so no argument pattern may allow it.
var (
	errUnterminated = errors.New("an unterminated quote")
	errBackslash    = errors.New("a trailing backslash")
	errExpansion    = errors.New("parameter expansion ($)")
	errBraces       = errors.New("brace expansion ({a,b})")
)

// shellWord is one word of a simple command after quote removal.
type shellWord struct {
	text []rune
	lit  []bool // lit[i]: text[i] was quoted or escaped, so never a glob or brace character
}

// shellWords splits a simple command (a segment: no control operators,
// substitutions or redirections) into words the way sh does: blanks
// separate, and quotes and backslashes are removed, keeping what they
// quote. A "$" outside single quotes is an error: the word it is in is
// only known when the shell runs.
func shellWords(s string) ([]shellWord, error) {
	var out []shellWord
	var w shellWord
	in := false
	add := func(c rune, lit bool) {
		w.text, w.lit, in = append(w.text, c), append(w.lit, lit), true
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case ' ', '\t':
			if in {
				out, w, in = append(out, w), shellWord{}, false
			}
		case '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				add(rs[j], true)
				j++
			}
			if j == len(rs) {
				return nil, errUnterminated
			}
			in, i = true, j
		case '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '$' {
					return nil, errExpansion
				}
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("$`\"\\", rs[j+1]) {
					j++
				}
				add(rs[j], true)
			}
			if j == len(rs) {
				return nil, errUnterminated
			}
			in, i = true, j
		case '\\':
			if i+1 == len(rs) {
				return nil, errBackslash
			}
			i++
			add(rs[i], true)
		case '$':
			return nil, errExpansion
		default:
			add(c, false)
		}
	}
	if in {
		out = append(out, w)
	}
	return out, nil
}

// allowForm is the form of a simple command, or of an allow pattern
// (pattern true), that allow patterns are matched in:
//
//   - quotes and backslashes are removed (an empty word is shown as two
//     single quotes) and words are joined with one blank: "docs/a b.md"
//     in quotes is matched as docs/a b.md, as a wildcard spans blanks
//     anyway;
//   - each word is cleaned like a path, lexically: "//" becomes "/" and
//     "." segments are dropped ("./docs/a.md" is "docs/a.md"), keeping
//     relative and absolute apart, a trailing "/", and a "/" at all ("./x"
//     stays "./x": to the shell "./make" is not "make");
//   - ".." is never cleaned away (docs/x may be a symlink, and then
//     docs/x/.. is not docs): each ".." segment, also one after "=" or ":"
//     within a segment (--dir=../x, PATH=..:x), becomes dotdot, which
//     no wildcard matches. In a command, so does a segment that starts
//     with "." or "[" and holds an unquoted glob character (".?", ".*",
//     ".[.]"), because the shell's glob can expand it to "..".
//
// A command with "$" outside single quotes or a brace expansion has no
// allow form (an error says which).
func allowForm(s string, pattern bool) (string, error) {
	ws, err := shellWords(s)
	if err != nil {
		return "", err
	}
	forms := make([]string, len(ws))
	for i, w := range ws {
		if !pattern && braces(w) {
			return "", errBraces
		}
		forms[i] = w.form(pattern)
	}
	return strings.Join(forms, " "), nil
}

// braces reports whether bash would brace-expand the word: an unquoted
// "{", then an unquoted "," or "..", then an unquoted "}".
func braces(w shellWord) bool {
	var skel strings.Builder
	for i, c := range w.text {
		if w.lit[i] {
			c = '_'
		}
		skel.WriteRune(c)
	}
	s := skel.String()
	open := strings.IndexByte(s, '{')
	if open < 0 {
		return false
	}
	inner := s[open+1:]
	end := strings.LastIndexByte(inner, '}')
	return end >= 0 && (strings.Contains(inner[:end], ",") || strings.Contains(inner[:end], ".."))
}

// form renders one word for allowForm.
func (w shellWord) form(pattern bool) string {
	text := string(w.text)
	if text == "" {
		return "''"
	}
	var kept []string
	start := 0 // rune index of the current segment
	segs := strings.Split(text, "/")
	for _, seg := range segs {
		n := len([]rune(seg))
		if seg != "" && seg != "." {
			kept = append(kept, w.segment(start, start+n, pattern))
		}
		start += n + 1
	}
	out := strings.Join(kept, "/")
	if len(segs) > 1 {
		last := segs[len(segs)-1]
		if len(kept) > 0 && (last == "" || last == ".") {
			out += "/"
		}
		if segs[0] == "" {
			out = "/" + out
		}
	}
	switch {
	case out == "":
		out = "."
	case len(segs) > 1 && !strings.Contains(out, "/"):
		// "./make" is not "make", which the shell looks up in PATH, nor
		// is "./main" to git checkout or "./x" to npm install.
		out = "./" + out
	}
	return out
}

// segment renders the path segment text[from:to], marking its ".." parts.
func (w shellWord) segment(from, to int, pattern bool) string {
	var b strings.Builder
	part := from
	for i := from; i <= to; i++ {
		if i < to && w.text[i] != '=' && w.text[i] != ':' {
			continue
		}
		if w.climbs(part, i, pattern) {
			b.WriteRune(dotdot)
		} else {
			b.WriteString(string(w.text[part:i]))
		}
		if i < to {
			b.WriteRune(w.text[i])
		}
		part = i + 1
	}
	return b.String()
}

// climbs reports whether text[from:to] may name the parent directory.
func (w shellWord) climbs(from, to int, pattern bool) bool {
	p := string(w.text[from:to])
	if p == ".." {
		return true
	}
	if pattern || p == "" || p[0] != '.' && p[0] != '[' {
		return false
	}
	for i := from; i < to; i++ {
		if !w.lit[i] && strings.ContainsRune("*?[", w.text[i]) {
			return true
		}
	}
	return false
}

// globDotdot is glob for allow forms: the pattern's wildcards never match
// a dotdot, so each dotdot of s must meet one of the pattern's.
func globDotdot(pattern, s string) bool {
	ps, ss := strings.Split(pattern, string(dotdot)), strings.Split(s, string(dotdot))
	if len(ps) != len(ss) {
		return false
	}
	for i := range ps {
		if !glob(ps[i], ss[i]) {
			return false
		}
	}
	return true
}

// cleanWords cleans every blank-separated word that holds a "/" with
// path.Clean (".." included): what deny patterns are also tried on, so
// "cat /etc/../etc/shadow" and "rm -rf //" meet "cat /etc/shadow" and
// "rm -rf /".
func cleanWords(s string) string {
	ws := strings.Split(s, " ")
	for i, w := range ws {
		if strings.Contains(w, "/") {
			ws[i] = path.Clean(w)
		}
	}
	return strings.Join(ws, " ")
}

// globFrom reports whether pattern matches s from the start of one of
// its words or path segments (at 0, or just after a blank or a "/"), and
// from where. It is glob with a leading wildcard that may only end at
// such a start, so it costs what one glob does.
func globFrom(pattern, s string) (int, bool) { return globAt(pattern, s, true) }

// globAt is glob, and globFrom when anyStart: then a mismatch before the
// pattern's first wildcard moves the start to the next word or segment
// instead of failing. It returns the byte offset the match starts at.
func globAt(pattern, s string, anyStart bool) (int, bool) {
	p, t := []rune(pattern), []rune(s)
	from := 0
	// next moves the start to the next word or segment start.
	next := func() bool {
		if !anyStart {
			return false
		}
		for from++; from <= len(t); from++ {
			if c := t[from-1]; c == ' ' || c == '/' {
				return true
			}
		}
		return false
	}
	px, tx, star, mark := 0, 0, -1, 0
	for tx < len(t) {
		switch {
		case px < len(p) && p[px] == '*':
			star, mark = px, tx
			px++
		case px < len(p) && (p[px] == '?' || p[px] == t[tx]):
			px++
			tx++
		case star >= 0:
			// Once a wildcard of the pattern is reached, a later start
			// cannot help: that wildcard can take what lies between.
			mark++
			px, tx = star+1, mark
		default:
			if !next() {
				return 0, false
			}
			px, tx = 0, from
		}
	}
	// The text is used up; a later start would leave even less of it.
	for px < len(p) && p[px] == '*' {
		px++
	}
	if px != len(p) {
		return 0, false
	}
	return len(string(t[:from])), true
}
