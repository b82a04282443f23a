package frontmatter

import (
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in, head, body string
		err            error
	}{
		{"---\na: 1\n---\nbody\n", "a: 1\n", "body\n", nil},
		{"\xef\xbb\xbf---\r\na: 1\r\n--- \r\nbody", "a: 1\r\n", "body", nil},
		{"---\n---\n", "", "", nil},
		{"---\na: 1\n---", "a: 1\n", "", nil},
		{"# title\n---\n", "", "", ErrMissing},
		{"", "", "", ErrMissing},
		{"---\na: 1\n", "", "", ErrUnclosed},
	} {
		head, body, err := Split([]byte(c.in))
		if !errors.Is(err, c.err) || string(head) != c.head || string(body) != c.body {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", c.in, head, body, err, c.head, c.body, c.err)
		}
	}
}
