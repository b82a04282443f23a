package faketelegram

import (
	"fmt"
	"strings"
)

// The parsers below follow tdlib's (td/telegram/MessageEntity.cpp, which the
// Bot API server uses): same rules, same error texts. They return the plain
// text (markup removed), which is what the length limit counts.

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// mdEntity is an open MarkdownV2 entity.
type mdEntity struct {
	kind  string // "Bold", "Italic", ... as tdlib names them in errors
	begin int    // byte offset of its opening marker
}

// parseMarkdownV2 checks MarkdownV2: every reserved character outside code
// must be escaped with '\', entities must be closed (innermost first).
func parseMarkdownV2(s string) (string, error) {
	var out strings.Builder
	var stack []mdEntity
	n := len(s)
	inQuote, quoteDepth := false, 0
	top := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].kind
	}
	unclosed := func() error {
		e := stack[len(stack)-1]
		return fmt.Errorf("Can't find end of %s entity at byte offset %d", e.kind, e.begin)
	}
	reserved := func(c byte) error {
		return fmt.Errorf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	next := func(i int) byte {
		if i+1 < n {
			return s[i+1]
		}
		return 0
	}
	for i := 0; i < n; {
		c := s[i]
		t := top()
		inCode := t == "Code" || t == "Pre" || t == "PreCode"
		if !inCode && (i == 0 || s[i-1] == '\n' || s[i-1] == '\r') {
			switch {
			case c == '>':
				if !inQuote {
					inQuote, quoteDepth = true, len(stack)
				}
				i++
				continue
			case strings.HasPrefix(s[i:], "**>"):
				if !inQuote {
					inQuote, quoteDepth = true, len(stack)
				}
				i += 3
				continue
			case inQuote:
				if len(stack) > quoteDepth {
					return "", unclosed() // entities can't leave a block quote
				}
				inQuote = false
			}
		}
		if c == '\\' && i+1 < n && s[i+1] > 0 && s[i+1] <= 126 {
			out.WriteByte(s[i+1])
			i += 2
			continue
		}
		if inCode && c != '`' {
			out.WriteByte(c)
			i++
			continue
		}
		if !strings.ContainsRune("_*[]()~`>#+-=|{}.!", rune(c)) {
			out.WriteByte(c)
			i++
			continue
		}
		// "||" closing the last line of an expandable block quote.
		if c == '|' && next(i) == '|' && inQuote && t != "Spoiler" &&
			(i+2 == n || s[i+2] == '\n' || s[i+2] == '\r') {
			i += 2
			continue
		}
		var end bool
		switch t {
		case "Bold":
			end = c == '*'
		case "Italic":
			end = c == '_' && next(i) != '_'
		case "Underline":
			end = c == '_' && next(i) == '_'
		case "Strikethrough":
			end = c == '~'
		case "Spoiler":
			end = c == '|' && next(i) == '|'
		case "Code":
			end = c == '`'
		case "Pre", "PreCode":
			end = strings.HasPrefix(s[i:], "```")
		case "TextUrl", "CustomEmoji":
			end = c == ']'
		}
		if !end {
			e := mdEntity{begin: i}
			switch {
			case c == '_' && next(i) == '_':
				e.kind, i = "Underline", i+2
			case c == '_':
				e.kind, i = "Italic", i+1
			case c == '*':
				e.kind, i = "Bold", i+1
			case c == '~':
				e.kind, i = "Strikethrough", i+1
			case c == '|' && next(i) == '|':
				e.kind, i = "Spoiler", i+2
			case c == '[':
				e.kind, i = "TextUrl", i+1
			case c == '!' && next(i) == '[':
				e.kind, i = "CustomEmoji", i+2
			case strings.HasPrefix(s[i:], "```"):
				e.kind, i = "Pre", i+3
				j := i
				for j < n && !isSpace(s[j]) && s[j] != '`' {
					j++
				}
				if j > i && j < n && isSpace(s[j]) {
					e.kind, i = "PreCode", j
				}
				i = skipNewline(s, i)
			case c == '`':
				e.kind, i = "Code", i+1
			default:
				return "", reserved(c)
			}
			stack = append(stack, e)
			continue
		}
		stack = stack[:len(stack)-1]
		switch t {
		case "Underline", "Spoiler":
			i += 2
		case "Pre", "PreCode":
			i += 3
		case "TextUrl", "CustomEmoji":
			i++
			if i >= n || s[i] != '(' {
				if t == "CustomEmoji" {
					return "", fmt.Errorf("Custom emoji entity must contain a tg://emoji URL")
				}
				continue
			}
			j := i + 1
			for j < n && s[j] != ')' {
				if s[j] == '\\' && j+1 < n && (s[j+1] == ')' || s[j+1] == '\\') {
					j++
				}
				j++
			}
			if j >= n {
				if t == "CustomEmoji" {
					return "", fmt.Errorf("Can't find end of a custom emoji URL at byte offset %d", i+1)
				}
				return "", fmt.Errorf("Can't find end of a URL at byte offset %d", i+1)
			}
			i = j + 1
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return "", unclosed()
	}
	return out.String(), nil
}

// skipNewline skips one line break ("\n", "\r", "\r\n" or "\n\r") at i.
func skipNewline(s string, i int) int {
	if i < len(s) && (s[i] == '\n' || s[i] == '\r') {
		if i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r') && s[i] != s[i+1] {
			return i + 2
		}
		return i + 1
	}
	return i
}

// parseMarkdown checks legacy Markdown: *bold*, _italic_, `code`, ```pre```
// and [text](url); '\' escapes _ * ` [ outside entities; no nesting.
func parseMarkdown(s string) (string, error) {
	var out strings.Builder
	n := len(s)
	for i := 0; i < n; i++ {
		c := s[i]
		if c == '\\' && i+1 < n && strings.IndexByte("_*`[", s[i+1]) >= 0 {
			i++
			out.WriteByte(s[i])
			continue
		}
		if strings.IndexByte("_*`[", c) < 0 {
			out.WriteByte(c)
			continue
		}
		begin, endChar, pre := i, c, false
		if c == '[' {
			endChar = ']'
		}
		i++
		if c == '`' && strings.HasPrefix(s[i:], "``") {
			i += 2
			pre = true
			j := i
			for j < n && !isSpace(s[j]) && s[j] != '`' {
				j++
			}
			if j != i && j < n && s[j] != '`' {
				i = j // a language
			}
			i = skipNewline(s, i)
		}
		for i < n && (s[i] != endChar || pre && !strings.HasPrefix(s[i:], "```")) {
			out.WriteByte(s[i])
			i++
		}
		if i >= n {
			return "", fmt.Errorf("Can't find end of the entity starting at byte offset %d", begin)
		}
		switch {
		case pre:
			i += 2
		case c == '[' && i+1 < n && s[i+1] == '(':
			i += 2
			for i < n && s[i] != ')' {
				i++
			}
		}
	}
	return out.String(), nil
}
