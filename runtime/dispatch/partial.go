package dispatch

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ReplyTexts decodes the text of a run's chat_send calls from their
// arguments as the model streams them: once, for everyone who shows it
// while it is written (the event stream, the chat). A run's steps come from
// one goroutine, so it needs no lock.
type ReplyTexts struct {
	args map[[2]int]string // by step and call index
}

// Feed adds a piece of the arguments of call idx of step and returns the
// reply's text so far; ok is false for other tools and before the text
// starts.
func (r *ReplyTexts) Feed(step, idx int, tool, piece string) (text string, ok bool) {
	if tool != ChatSendTool {
		return "", false
	}
	if r.args == nil {
		r.args = map[[2]int]string{}
	}
	k := [2]int{step, idx}
	r.args[k] += piece
	return PartialText(r.args[k])
}

// Restart forgets what the calls of step have written: the model call was
// made again (agent.StepAttemptRestarted), and the new attempt's arguments
// start from the beginning. Without this they would be appended to the
// failed attempt's and decode as its text, frozen.
func (r *ReplyTexts) Restart(step int) {
	for k := range r.args {
		if k[0] == step {
			delete(r.args, k)
		}
	}
}

// PartialText decodes as much of the "text" string of a JSON object
// as has arrived, so a reply can be shown while it is being written.
func PartialText(s string) (string, bool) {
	i := strings.Index(s, `"text"`)
	if i < 0 {
		return "", false
	}
	rest := strings.TrimLeft(s[i+len(`"text"`):], " \t\r\n")
	if !strings.HasPrefix(rest, ":") {
		return "", false
	}
	rest = strings.TrimLeft(rest[1:], " \t\r\n")
	if !strings.HasPrefix(rest, `"`) {
		return "", false
	}
	var b strings.Builder
	for j := 1; j < len(rest); {
		c := rest[j]
		switch {
		case c == '"':
			return b.String(), true
		case c == '\\':
			if j+1 >= len(rest) {
				return b.String(), true
			}
			esc := rest[j+1]
			if esc == 'u' {
				if j+6 > len(rest) {
					return b.String(), true
				}
				var r rune
				if _, err := fmt.Sscanf(rest[j+2:j+6], "%04x", &r); err != nil {
					return b.String(), true
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if j+6 > len(rest) {
						return b.String(), true
					}
					var r2 rune
					if rest[j] == '\\' && rest[j+1] == 'u' {
						if _, err := fmt.Sscanf(rest[j+2:j+6], "%04x", &r2); err == nil {
							r = utf16.DecodeRune(r, r2)
							j += 6
						}
					}
				}
				b.WriteRune(r)
				continue
			}
			b.WriteByte(unescape(esc))
			j += 2
		default:
			r, size := utf8.DecodeRuneInString(rest[j:])
			if r == utf8.RuneError && size < 2 && !utf8.FullRuneInString(rest[j:]) {
				return b.String(), true
			}
			b.WriteString(rest[j : j+size])
			j += size
		}
	}
	return b.String(), true
}

// unescape returns the byte a one-letter JSON escape stands for.
func unescape(esc byte) byte {
	switch esc {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return esc // \" \\ \/
}
