package console

import (
	"bytes"
	"fmt"
	"html"
)

// The pages are written with markup, a small escaping writer, instead of
// html/template: text/template looks methods up by name at run time,
// which makes the linker keep every exported method of every type in the
// binary. With it ship grew from 22 to 47 MB and its idle RSS from 15.4 to
// 21 MiB, for pages this simple. The rule that keeps markup safe is the
// same as html/template's: markup is only ever a constant; everything
// else goes through text or an attribute value, which escape it.

// markup is an HTML document being written.
type markup struct{ b bytes.Buffer }

// on is the value of a boolean attribute that is present ("selected").
const on = "\x00on"

// raw writes constant markup. Never pass it data.
func (m *markup) raw(s string) { m.b.WriteString(s) }

// rendered writes HTML the Markdown renderer made (markdown.go), the one
// kind of markup that is not a constant: its renderers let through only
// formatting.
func (m *markup) rendered(h renderedHTML) { m.b.WriteString(string(h)) }

// text writes s as text, escaped.
func (m *markup) text(s string) { m.b.WriteString(html.EscapeString(s)) }

// textf writes a formatted string as text, escaped.
func (m *markup) textf(format string, args ...any) { m.text(fmt.Sprintf(format, args...)) }

// open writes a start tag with attributes given as name, value pairs. A
// value of on writes the bare name; an empty value for a name that starts
// with "?" leaves the attribute out (so "?aria-current" is conditional).
func (m *markup) open(tag string, attrs ...string) {
	m.b.WriteByte('<')
	m.b.WriteString(tag)
	for i := 0; i+1 < len(attrs); i += 2 {
		name, val := attrs[i], attrs[i+1]
		if name[0] == '?' {
			if val == "" {
				continue
			}
			name = name[1:]
		}
		m.b.WriteByte(' ')
		m.b.WriteString(name)
		if val == on {
			continue
		}
		m.b.WriteString(`="`)
		m.b.WriteString(html.EscapeString(val))
		m.b.WriteByte('"')
	}
	m.b.WriteByte('>')
}

// close writes an end tag.
func (m *markup) close(tag string) {
	m.b.WriteString("</")
	m.b.WriteString(tag)
	m.b.WriteByte('>')
}

// el writes a whole element holding text.
func (m *markup) el(tag, text string, attrs ...string) {
	m.open(tag, attrs...)
	m.text(text)
	m.close(tag)
}

// wrap writes an element whose content body writes.
func (m *markup) wrap(tag string, body func(), attrs ...string) {
	m.open(tag, attrs...)
	body()
	m.close(tag)
}

// when returns v if cond holds, else "" (for conditional attributes).
func when(cond bool, v string) string {
	if cond {
		return v
	}
	return ""
}
