// Package frontmatter splits a Markdown file with a YAML header, the
// layout of Claude Code's SKILL.md and of ship's task files:
//
//	---
//	name: value
//	---
//	the body
package frontmatter

import (
	"bytes"
	"errors"
)

// Errors Split returns.
var (
	// ErrMissing: the text does not start with a "---" line.
	ErrMissing = errors.New(`no frontmatter: the file must start with a line "---"`)
	// ErrUnclosed: no "---" line ends the header.
	ErrUnclosed = errors.New(`frontmatter not closed: a line "---" must end it`)
)

// Split returns the YAML between the first line "---" and the next one,
// and the body after it. A byte-order mark is skipped, and a fence line may
// carry blanks and a "\r" around "---".
func Split(b []byte) (head, body []byte, err error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if !fence(first) {
		return nil, nil, ErrMissing
	}
	for off := 0; off < len(rest); {
		line, next, found := bytes.Cut(rest[off:], []byte("\n"))
		if fence(line) {
			return rest[:off], next, nil
		}
		if !found {
			break
		}
		off = len(rest) - len(next)
	}
	return nil, nil, ErrUnclosed
}

func fence(line []byte) bool { return string(bytes.TrimSpace(line)) == "---" }
