package tools

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// minSecretLen is the shortest value treated as a secret: shorter ones would
// be found all over ordinary output.
const minSecretLen = 6

// redactedMark replaces every secret exec_shell finds.
const redactedMark = "<redacted>"

// runSpec is one command for runGroup.
type runSpec struct {
	command string
	dir     string
	env     []string
	timeout time.Duration
	keep    int // bytes kept of each stream
}

// runOutcome is how a command ended and what it wrote.
type runOutcome struct {
	exitCode  int    // -1 when a signal ended it
	signal    string // the signal that ended it, if any
	timedOut  bool   // killed because the timeout passed
	cancelled bool   // killed because the run's context ended
	detached  bool   // a process outside the group held the output open
	killErr   error  // a kill of the group that failed (EPERM), if any
	duration  time.Duration
	stdout    capture
	stderr    capture
}

// capture keeps the first keep bytes of a stream and counts all of them.
type capture struct {
	head  []byte
	total int64
	keep  int
}

// readFrom drains r to its end, keeping the head: the writer never blocks
// on a full pipe because its output is being dropped.
func (c *capture) readFrom(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.total += int64(n)
			if room := c.keep - len(c.head); room > 0 {
				c.head = append(c.head, buf[:min(n, room)]...)
			}
		}
		if err != nil {
			return
		}
	}
}

// secretSet holds the secret values exec_shell hides.
type secretSet struct {
	values  [][]byte
	longest int
}

// newSecretSet keeps the distinct values of at least minSecretLen bytes,
// trimmed of surrounding spaces (a value read from a file often ends in a
// newline).
func newSecretSet(values []string) *secretSet {
	s := &secretSet{}
	seen := map[string]bool{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen || seen[v] {
			continue
		}
		seen[v] = true
		s.values = append(s.values, []byte(v))
		s.longest = max(s.longest, len(v))
	}
	return s
}

// lookahead is how many bytes past a cap must be read so that a secret that
// starts before the cap is seen whole.
func (s *secretSet) lookahead() int {
	return max(s.longest-1, 0)
}

// containedIn says whether v contains a secret.
func (s *secretSet) containedIn(v string) bool {
	for _, sec := range s.values {
		if strings.Contains(v, string(sec)) {
			return true
		}
	}
	return false
}

// spans returns the byte ranges [start, end) of b covered by secrets,
// sorted and merged, overlapping occurrences included.
func (s *secretSet) spans(b []byte) [][2]int {
	var sp [][2]int
	for _, v := range s.values {
		for off := 0; off < len(b); {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			sp = append(sp, [2]int{off + i, off + i + len(v)})
			off += i + 1
		}
	}
	slices.SortFunc(sp, func(a, b [2]int) int { return a[0] - b[0] })
	merged := sp[:0]
	for _, r := range sp {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// redact returns b[:end] with every span that ends by end replaced.
func redact(b []byte, sp [][2]int, end int) string {
	var out strings.Builder
	at := 0
	for _, r := range sp {
		if r[1] > end {
			break
		}
		out.Write(b[at:r[0]])
		out.WriteString(redactedMark)
		at = r[1]
	}
	out.Write(b[at:end])
	return out.String()
}

// redactString replaces the secrets in s.
func (s *secretSet) redactString(v string) string {
	b := []byte(v)
	return redact(b, s.spans(b), len(b))
}

// clip turns the kept head of a stream of total bytes into the text the
// model sees: at most limit bytes of it, secrets redacted, and a note of how
// many bytes were cut. Secrets are searched for in the whole head, which
// runs past limit by the lookahead, so that a secret straddling the cut is
// recognised: the cut then moves back to where the secret starts, and none
// of it is shown. The cut never splits a UTF-8 character either.
func (s *secretSet) clip(head []byte, total int64, limit int) (string, int64) {
	sp := s.spans(head)
	cut := min(limit, len(head))
	if int64(cut) < total {
		cut = runeCut(head, cut)
		for _, r := range sp {
			if r[0] < cut && cut < r[1] {
				cut = r[0]
				break
			}
		}
	}
	text := redact(head, sp, cut)
	dropped := total - int64(cut)
	if dropped > 0 {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += fmt.Sprintf("… %d bytes cut", dropped)
	}
	return text, dropped
}

// runeCut moves cut back to the start of a UTF-8 character that b[:cut]
// would leave incomplete.
func runeCut(b []byte, cut int) int {
	for i := cut - 1; i >= 0 && i > cut-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:cut]) {
				return i
			}
			return cut
		}
	}
	return cut
}

// clipText keeps at most limit bytes of s, noting the rest as cut.
func clipText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := runeCut([]byte(s), limit)
	return fmt.Sprintf("%s… %d bytes cut", s[:cut], len(s)-cut)
}

// environ is the command's environment: this process's, minus the dropped
// names and any variable whose value holds a secret, with PWD set to Dir.
func (t *ExecShell) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if t.dropEnv[name] || (t.dir != "" && name == "PWD") || t.secrets.containedIn(value) {
			continue
		}
		env = append(env, kv)
	}
	if t.dir != "" {
		env = append(env, "PWD="+t.dir)
	}
	return env
}
