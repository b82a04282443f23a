package tools

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/secrets"
)

// runSpec is one command for runGroup.
type runSpec struct {
	argv    []string // sh -c command, or bwrap ... sh -c command
	dir     string
	env     []string
	timeout time.Duration
	keep    int // bytes kept of each stream
	// watchdog is the ship binary that kills the command's group if ship
	// dies first (Watch); "" runs without one.
	watchdog string
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

// clipRedacted turns the kept head of a stream of total bytes into the text the
// model sees: at most limit bytes of it, secrets redacted, and a note of how
// many bytes were cut. Secrets are searched for in the whole head, which
// runs past limit by the lookahead, so that a secret straddling the cut is
// recognised: the cut then moves back to where the secret starts, and none
// of it is shown. The cut never splits a UTF-8 character either.
func clipRedacted(s *secrets.Set, head []byte, total int64, limit int) (string, int64) {
	sp := s.Spans(head)
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
	text := secrets.Cut(head, sp, cut)
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
func (t *ExecShell) environ(hidden *secrets.Set) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if t.dropEnv[name] || (t.dir != "" && name == "PWD") || hidden.In(value) {
			continue
		}
		env = append(env, kv)
	}
	if t.dir != "" {
		env = append(env, "PWD="+t.dir)
	}
	return env
}
