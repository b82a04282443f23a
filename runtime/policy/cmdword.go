package policy

import (
	"errors"
	"fmt"
	"strings"
)

// errParse is wrapped when a command line does not parse as sh would
// read it; errNotLiteral when a command word is computed by the shell.
var (
	errParse      = errors.New("the command line does not parse")
	errNotLiteral = errors.New("command word is not a literal")
)

// checkCommandWords finds every command word of a command line, also
// inside command substitutions, subshells, groups, if/while/for/case
// bodies and after wrappers like sudo, env and nice, and returns an error
// (wrapping errNotLiteral) for the first one that is not a literal: one
// with a "$", a backtick, an unquoted glob (* ? [...]) or a brace
// expansion. Such a word is what the shell computes when it runs, so no
// rule can be checked against it ("x=rm; $x -rf /"). Assignments and
// redirections before a command word are skipped, however many. A line
// that does not parse (an unterminated quote or substitution) is an error
// wrapping errParse: the shell may run part of it before it notices.
//
// The scan errs on the side of refusing: a word it is not sure about
// (say, an option's value after sudo) is checked as if it were a
// command word.
func checkCommandWords(arg string) error {
	sc := &scanner{s: arg}
	return sc.list(false)
}

// scanner reads a command line for checkCommandWords.
type scanner struct {
	s        string
	i        int
	heredocs []heredoc // here-documents whose bodies start at the next newline
}

type heredoc struct {
	delim        string
	quoted, tabs bool // quoted: a body without expansions; tabs: <<- strips leading tabs
}

// scanWord is one word as checkCommandWords sees it.
type scanWord struct {
	raw     string // as written
	text    string // quotes and backslashes removed
	literal bool   // no "$", backtick, unquoted glob or brace expansion
	quoted  bool   // some part of it was quoted or escaped
}

// The states of a simple command.
const (
	wantCommand = iota // the next word is the command word
	wantWrapped        // after a wrapper: options, then the command it runs
	inArgs             // the command's arguments
)

// list scans commands up to the end of the line or, when sub is true, to
// the ")" that closes a "$(".
func (sc *scanner) list(sub bool) error {
	state, afterOption, depth := wantCommand, false, 0
	cases := 0 // open case statements: their patterns end in ")"
	for {
		for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
			sc.i++
		}
		if sc.i == len(sc.s) {
			if sub {
				return fmt.Errorf(`%w: an unterminated "$("`, errParse)
			}
			return nil
		}
		switch c := sc.s[sc.i]; c {
		case '\n':
			sc.i++
			if err := sc.bodies(); err != nil {
				return err
			}
			state = wantCommand
		case ';', '&', '|', '\r':
			sc.i++
			state = wantCommand
		case '(':
			sc.i++
			depth++
			state = wantCommand
		case ')':
			sc.i++
			if sub && depth == 0 && cases == 0 {
				return nil
			}
			depth = max(depth-1, 0)
			state = wantCommand // also after a case pattern
		case '<', '>':
			if err := sc.redirect(); err != nil {
				return err
			}
		case '#': // a comment, up to the newline
			for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
				sc.i++
			}
		default:
			w, err := sc.word()
			if err != nil {
				return err
			}
			if w.raw == "" || !w.quoted && w.text == "" && !strings.ContainsAny(w.raw, "$`") {
				continue // a line continuation alone
			}
			if sc.i < len(sc.s) && (sc.s[sc.i] == '<' || sc.s[sc.i] == '>') && digits(w.raw) {
				continue // the file descriptor of a redirection: 2>/dev/null
			}
			if w.raw == "{" {
				// A group, also after "function f": what follows is a
				// command (and in "echo {" merely checked as one).
				state = wantCommand
				continue
			}
			switch state {
			case wantCommand:
				if assignment(w.raw) || reserved(w.raw) {
					continue
				}
				if !w.literal {
					return notLiteral(w.raw)
				}
				switch w.raw {
				case "case":
					cases++
				case "esac":
					cases = max(cases-1, 0)
				}
				state = inArgs
				if wrapper(w.text) {
					state, afterOption = wantWrapped, false
				}
			case wantWrapped:
				if !w.literal {
					return notLiteral(w.raw)
				}
				switch {
				case strings.HasPrefix(w.text, "-"):
					afterOption = !strings.Contains(w.text, "=")
				case assignment(w.raw), countOrDuration(w.text):
					afterOption = false
				case afterOption: // perhaps the option's value: keep looking
					afterOption = false
				default:
					state = inArgs
					if wrapper(w.text) {
						state = wantWrapped
					}
				}
			}
		}
	}
}

func notLiteral(raw string) error { return fmt.Errorf("%w: %s", errNotLiteral, clip(raw)) }

// word reads one word, checking the commands in its substitutions.
func (sc *scanner) word() (scanWord, error) {
	start := sc.i
	var text, skel strings.Builder // skel: the word with quoted characters as "_"
	w := scanWord{literal: true}
	for sc.i < len(sc.s) && !strings.ContainsRune(" \t\n\r;&|()<>", rune(sc.s[sc.i])) {
		switch c := sc.s[sc.i]; c {
		case '\\':
			sc.i++
			if sc.i < len(sc.s) {
				if sc.s[sc.i] != '\n' { // backslash-newline joins lines
					w.quoted = true
					text.WriteByte(sc.s[sc.i])
					skel.WriteByte('_')
				}
				sc.i++
			}
		case '\'':
			w.quoted = true
			end := strings.IndexByte(sc.s[sc.i+1:], '\'')
			if end < 0 {
				return w, fmt.Errorf("%w: an unterminated '", errParse)
			}
			text.WriteString(sc.s[sc.i+1 : sc.i+1+end])
			skel.WriteByte('_')
			sc.i += end + 2
		case '"':
			w.quoted = true
			sc.i++
			if err := sc.dquote(&text, &w.literal, true); err != nil {
				return w, err
			}
			skel.WriteByte('_')
		case '$', '`':
			w.literal = false
			if err := sc.expansion(); err != nil {
				return w, err
			}
		default:
			text.WriteByte(c)
			skel.WriteByte(c)
			sc.i++
		}
	}
	w.raw, w.text = sc.s[start:sc.i], text.String()
	if s := skel.String(); strings.ContainsAny(s, "*?") || globBracket(s) || braces(shellWord{text: []rune(s), lit: make([]bool, len([]rune(s)))}) {
		w.literal = false
	}
	return w, nil
}

// globBracket reports whether s has a "[" with a "]" after it: a bracket
// expression ("[" alone is the test command).
func globBracket(s string) bool {
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') >= 0
}

// dquote reads the rest of a double-quoted string (closed says a closing
// quote is needed: a here-document body has none), checking the commands
// of its substitutions.
func (sc *scanner) dquote(text *strings.Builder, literal *bool, closed bool) error {
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; c {
		case '"':
			if closed {
				sc.i++
				return nil
			}
			sc.i++
		case '\\':
			if sc.i+1 < len(sc.s) && strings.IndexByte("$`\"\\\n", sc.s[sc.i+1]) >= 0 {
				sc.i++
			}
			text.WriteByte(sc.s[sc.i])
			sc.i++
		case '$', '`':
			*literal = false
			if err := sc.expansion(); err != nil {
				return err
			}
		default:
			text.WriteByte(c)
			sc.i++
		}
	}
	if closed {
		return fmt.Errorf(`%w: an unterminated "`, errParse)
	}
	return nil
}

// expansion reads a "$" or backtick expansion, checking the commands of
// a substitution in it. A plain "$name" leaves the name to the caller.
func (sc *scanner) expansion() error {
	if sc.s[sc.i] == '`' {
		return sc.backtick()
	}
	sc.i++ // the "$"
	switch {
	case strings.HasPrefix(sc.s[sc.i:], "(("):
		return sc.arithmetic()
	case strings.HasPrefix(sc.s[sc.i:], "("):
		sc.i++
		return sc.list(true)
	case strings.HasPrefix(sc.s[sc.i:], "{"):
		sc.i++
		return sc.parameter()
	case strings.HasPrefix(sc.s[sc.i:], "'"): // $'...', with backslash escapes
		for sc.i++; sc.i < len(sc.s); sc.i++ {
			switch sc.s[sc.i] {
			case '\\':
				sc.i++
			case '\'':
				sc.i++
				return nil
			}
		}
		return fmt.Errorf("%w: an unterminated $'", errParse)
	}
	return nil
}

// backtick reads a `...` substitution and checks its commands.
func (sc *scanner) backtick() error {
	var inner strings.Builder
	for sc.i++; sc.i < len(sc.s); sc.i++ {
		c := sc.s[sc.i]
		if c == '`' {
			sc.i++
			return (&scanner{s: inner.String()}).list(false)
		}
		if c == '\\' && sc.i+1 < len(sc.s) {
			sc.i++
			if n := sc.s[sc.i]; n != '`' && n != '\\' && n != '$' {
				inner.WriteByte('\\')
			}
			c = sc.s[sc.i]
		}
		inner.WriteByte(c)
	}
	return fmt.Errorf("%w: an unterminated `", errParse)
}

// parameter reads the rest of a ${...} expansion, checking the commands
// of substitutions in it (${x:-$(cmd)}).
func (sc *scanner) parameter() error {
	depth := 1
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case '\\':
			sc.i += 2
		case '\'':
			end := strings.IndexByte(sc.s[sc.i+1:], '\'')
			if end < 0 {
				return fmt.Errorf("%w: an unterminated '", errParse)
			}
			sc.i += end + 2
		case '"':
			sc.i++
			var ignored strings.Builder
			lit := false
			if err := sc.dquote(&ignored, &lit, true); err != nil {
				return err
			}
		case '$', '`':
			if err := sc.expansion(); err != nil {
				return err
			}
		case '{':
			depth++
			sc.i++
		case '}':
			sc.i++
			if depth--; depth == 0 {
				return nil
			}
		default:
			sc.i++
		}
	}
	return fmt.Errorf("%w: an unterminated ${", errParse)
}

// arithmetic reads $((...)). As in bash, it is arithmetic only when the
// ")" that closes its second "(" is followed at once by ")"; otherwise it
// is read again as the command substitution of a subshell: bash runs
// "$((echo a); (echo b))" as commands.
func (sc *scanner) arithmetic() error {
	start := sc.i // at "(("
	depth := 0
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case '(':
			depth++
			sc.i++
		case ')':
			sc.i++
			if depth--; depth == 1 {
				if sc.i < len(sc.s) && sc.s[sc.i] == ')' {
					sc.i++
					return nil
				}
				sc.i = start + 1
				return sc.list(true)
			}
		case '$', '`':
			if err := sc.expansion(); err != nil {
				return err
			}
		default:
			sc.i++
		}
	}
	return fmt.Errorf(`%w: an unterminated "$(("`, errParse)
}

// redirect reads a redirection operator and its target word, and notes
// a here-document.
func (sc *scanner) redirect() error {
	start := sc.i
	for sc.i < len(sc.s) && strings.IndexByte("<>&|-", sc.s[sc.i]) >= 0 {
		sc.i++
	}
	op := sc.s[start:sc.i]
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
	if sc.i == len(sc.s) || strings.IndexByte("\n\r;&|()<>", sc.s[sc.i]) >= 0 {
		return nil // sh refuses it; nothing runs
	}
	w, err := sc.word()
	if err != nil {
		return err
	}
	if strings.HasPrefix(op, "<<") && !strings.HasPrefix(op, "<<<") {
		sc.heredocs = append(sc.heredocs, heredoc{delim: w.text, quoted: w.quoted, tabs: strings.HasPrefix(op, "<<-")})
	}
	return nil
}

// bodies skips the bodies of the here-documents begun on the line just
// ended, checking the substitutions of those whose delimiter is unquoted.
func (sc *scanner) bodies() error {
	docs := sc.heredocs
	sc.heredocs = nil
	for _, d := range docs {
		for sc.i < len(sc.s) {
			end := strings.IndexByte(sc.s[sc.i:], '\n')
			if end < 0 {
				end = len(sc.s) - sc.i
			}
			line := sc.s[sc.i : sc.i+end]
			next := min(sc.i+end+1, len(sc.s))
			if d.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.delim {
				sc.i = next
				break
			}
			if !d.quoted {
				body := &scanner{s: sc.s[sc.i : sc.i+end]}
				var ignored strings.Builder
				lit := false
				if err := body.dquote(&ignored, &lit, false); err != nil {
					return err
				}
			}
			sc.i = next
		}
	}
	return nil
}

// assignment reports whether a word is NAME=value.
func assignment(raw string) bool {
	name, _, ok := strings.Cut(raw, "=")
	name = strings.TrimSuffix(name, "+") // bash's NAME+=value
	if !ok || name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// reserved lists the words after which a command word still follows.
func reserved(raw string) bool {
	switch raw {
	case "!", "{", "}", "if", "then", "else", "elif", "do", "while", "until":
		return true
	}
	return false
}

// wrapper lists commands that run a command given in their arguments,
// as a word (sudo rm) or as a string (sh -c, eval): the words up to that
// command must be literals too, so "sudo $x" and "sh -c "$x"" are refused.
// What a literal string runs is beyond this check ("sh -c 'rm -rf /'"):
// deny patterns see it only with its quotes removed.
func wrapper(name string) bool {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	switch name {
	case "sudo", "doas", "env", "nohup", "nice", "ionice", "timeout", "command", "builtin", "exec",
		"xargs", "setsid", "stdbuf", "chrt", "taskset", "time", "unbuffer", "coproc", "eval",
		"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox":
		return true
	}
	return false
}

// countOrDuration reports whether s is a number or a duration (5, 1.5, 10s, 2m):
// the count or time a wrapper like nice or timeout takes.
func countOrDuration(s string) bool {
	s = strings.TrimRight(s, "smhd")
	return s != "" && s[0] >= '0' && s[0] <= '9' && strings.Trim(s, "0123456789.") == ""
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
