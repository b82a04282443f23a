package main

import (
	"strings"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
)

// editor is the input area of the terminal UI: a multi-line text with a
// cursor. Enter is handled by the caller (it sends); everything else that
// edits text is here.
type editor struct {
	text   []rune
	cursor int // index into text, 0…len(text)
}

// value returns the text.
func (e *editor) value() string { return string(e.text) }

// set replaces the text and puts the cursor at its end.
func (e *editor) set(s string) {
	e.text = []rune(s)
	e.cursor = len(e.text)
}

// insert adds s at the cursor. Pasted line ends arrive as CR or CRLF and
// are stored as LF.
func (e *editor) insert(s string) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	r := []rune(s)
	e.text = append(e.text[:e.cursor], append(r, e.text[e.cursor:]...)...)
	e.cursor += len(r)
}

// handleKey applies an editing key and reports whether it was one.
func (e *editor) handleKey(k tea.KeyMsg) bool {
	switch k.Type {
	case tea.KeyRunes:
		e.insert(string(k.Runes))
	case tea.KeySpace:
		e.insert(" ")
	case tea.KeyTab:
		e.insert("\t")
	case tea.KeyCtrlJ:
		e.insert("\n")
	case tea.KeyEnter:
		if !k.Alt {
			return false // the caller's: send
		}
		e.insert("\n")
	case tea.KeyBackspace, tea.KeyCtrlH:
		if e.cursor > 0 {
			e.text = append(e.text[:e.cursor-1], e.text[e.cursor:]...)
			e.cursor--
		}
	case tea.KeyDelete:
		if e.cursor < len(e.text) {
			e.text = append(e.text[:e.cursor], e.text[e.cursor+1:]...)
		}
	case tea.KeyLeft, tea.KeyCtrlB:
		e.cursor = max(0, e.cursor-1)
	case tea.KeyRight, tea.KeyCtrlF:
		e.cursor = min(len(e.text), e.cursor+1)
	case tea.KeyHome, tea.KeyCtrlA:
		e.cursor = e.lineStart()
	case tea.KeyEnd, tea.KeyCtrlE:
		e.cursor = e.lineEnd()
	case tea.KeyCtrlU:
		start := e.lineStart()
		e.text = append(e.text[:start], e.text[e.cursor:]...)
		e.cursor = start
	case tea.KeyCtrlK:
		e.text = append(e.text[:e.cursor], e.text[e.lineEnd():]...)
	case tea.KeyCtrlW:
		start := e.cursor
		for start > 0 && unicode.IsSpace(e.text[start-1]) {
			start--
		}
		for start > 0 && !unicode.IsSpace(e.text[start-1]) {
			start--
		}
		e.text = append(e.text[:start], e.text[e.cursor:]...)
		e.cursor = start
	default:
		return false
	}
	return true
}

// lineStart is the index where the cursor's line begins.
func (e *editor) lineStart() int {
	i := e.cursor
	for i > 0 && e.text[i-1] != '\n' {
		i--
	}
	return i
}

// lineEnd is the index where the cursor's line ends.
func (e *editor) lineEnd() int {
	i := e.cursor
	for i < len(e.text) && e.text[i] != '\n' {
		i++
	}
	return i
}

// submit handles Enter: a text ending with a backslash continues on a new
// line (the backslash becomes the line break) and ok is false; otherwise
// the text is taken out of the editor and returned.
func (e *editor) submit() (text string, ok bool) {
	if e.cursor == len(e.text) && len(e.text) > 0 && e.text[len(e.text)-1] == '\\' {
		e.text[len(e.text)-1] = '\n'
		return "", false
	}
	text = e.value()
	e.set("")
	return text, true
}

// lines renders the text with the cursor drawn by cursor(r), which gets the
// rune under the cursor (a space at a line end).
func (e *editor) lines(cursor func(string) string) []string {
	var b strings.Builder
	for i, r := range e.text {
		if i == e.cursor {
			if r == '\n' {
				b.WriteString(cursor(" "))
			} else {
				b.WriteString(cursor(string(r)))
				continue
			}
		}
		if r == '\t' {
			b.WriteString("    ")
			continue
		}
		b.WriteRune(r)
	}
	if e.cursor == len(e.text) {
		b.WriteString(cursor(" "))
	}
	return strings.Split(b.String(), "\n")
}
