package shipclient

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader) ([]sseFrame, error) {
	t.Helper()
	sse := newSSEReader(r)
	var out []sseFrame
	for {
		f, err := sse.Next()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func TestSSEParsing(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseFrame
	}{
		{"one event", "id: 1\ndata: {\"a\":1}\n\n", []sseFrame{{ID: "1", Data: `{"a":1}`}}},
		{"comments are skipped", ": keep-alive\n\nid: 2\n: between\ndata: x\n\n: keep-alive\n\n", []sseFrame{{ID: "2", Data: "x"}}},
		{"multi-line data", "data: a\ndata: b\ndata:c\n\n", []sseFrame{{Data: "a\nb\nc"}}},
		{"CRLF", "id: 7\r\ndata: x\r\n\r\ndata: y\r\n\r\n", []sseFrame{{ID: "7", Data: "x"}, {Data: "y"}}},
		{"lone CR", "data: x\r\rdata: y\r\r", []sseFrame{{Data: "x"}, {Data: "y"}}},
		{"BOM", "\uFEFFdata: x\n\n", []sseFrame{{Data: "x"}}},
		{"only one space is stripped", "data:  two\n\n", []sseFrame{{Data: " two"}}},
		{"event name and unknown fields", "event: other\nretry: 10\nfoo\ndata: x\n\n", []sseFrame{{Event: "other", Data: "x"}}},
		{"no data, no event", "id: 3\n\ndata: x\n\n", []sseFrame{{Data: "x"}}},
		{"empty data line counts", "data:\n\n", []sseFrame{{Data: ""}}},
		{"colon inside value", "data: {\"t\":\"a:b\"}\n\n", []sseFrame{{Data: `{"t":"a:b"}`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time exercises a CR at the end of the buffer.
			got, err := readAll(t, iotest.OneByteReader(strings.NewReader(tc.in)))
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want io.EOF", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d frames %+v, want %+v", len(got), got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("frame %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestSSECutInsideAnEvent(t *testing.T) {
	got, err := readAll(t, strings.NewReader("data: x\n\ndata: half"))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if len(got) != 1 || got[0].Data != "x" {
		t.Errorf("frames = %+v, want the complete one only", got)
	}
}

func TestSSEReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := readAll(t, io.MultiReader(strings.NewReader("data: x\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}
