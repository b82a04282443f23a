package shipclient

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxSSELine bounds one line of the stream. A content chunk or a tool's
// input is far smaller; a line this long means a broken stream.
const maxSSELine = 8 << 20

// sseFrame is one dispatched server-sent event.
type sseFrame struct {
	ID    string // the id field of this event ("" when it had none)
	Event string // the event field ("" means "message")
	Data  string // the data lines joined with "\n"
}

// sseReader parses a text/event-stream as the WHATWG HTML spec describes
// it: lines end with CRLF, LF or CR; ":" starts a comment; data lines
// accumulate; a blank line dispatches; an event cut off by EOF is dropped.
type sseReader struct {
	sc      *bufio.Scanner
	started bool
}

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	sc.Split(scanSSELines)
	return &sseReader{sc: sc}
}

// Next returns the next event. It returns io.EOF when the stream ended
// cleanly between events, and io.ErrUnexpectedEOF when it ended inside one.
func (r *sseReader) Next() (sseFrame, error) {
	var f sseFrame
	var data strings.Builder
	hasData, partial := false, false
	for r.sc.Scan() {
		line := r.sc.Text()
		if !r.started {
			r.started = true
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if line == "" {
			if !hasData {
				// An event without data is not dispatched; its fields are
				// forgotten, as the spec says.
				f, partial = sseFrame{}, false
				continue
			}
			f.Data = data.String()
			return f, nil
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment, e.g. ": keep-alive"
		}
		partial = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				f.ID = value
			}
		case "event":
			f.Event = value
		}
		// "retry" and unknown fields are ignored: reconnecting is the
		// caller's decision, not the stream's.
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return sseFrame{}, fmt.Errorf("event stream line longer than %d bytes: %w", maxSSELine, err)
		}
		return sseFrame{}, err
	}
	if partial || hasData {
		return sseFrame{}, io.ErrUnexpectedEOF
	}
	return sseFrame{}, io.EOF
}

// scanSSELines is a bufio.SplitFunc for the three line endings of
// text/event-stream. A CR at the end of the buffered data waits for one
// more byte, to tell CRLF from a lone CR.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	default:
		return 0, nil, nil
	}
}
