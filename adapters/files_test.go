package adapters

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// A file read for an upload is never cut at the limit: one that grew past
// it since it was checked is refused, and so is an empty one.
func TestReadOutFileRefusesWhatGrewOrIsEmpty(t *testing.T) {
	file := func(s string) dispatch.OutFile {
		return dispatch.OutFile{Name: "a.png", Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }}
	}
	if b, err := ReadOutFile(file("12345"), 5); err != nil || string(b) != "12345" {
		t.Fatalf("a file at the limit: %q %v", b, err)
	}
	if _, err := ReadOutFile(file("123456"), 5); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("a file over the limit: %v", err)
	}
	if _, err := ReadOutFile(file(""), 5); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty file: %v", err)
	}
}

func TestButtonCommand(t *testing.T) {
	for data, want := range map[string][3]string{
		"/answer K7QM2X 2":  {"answer", "K7QM2X 2", "true"},
		"/Approve@bot ABC ": {"approve", "ABC", "true"},
		"answer 1":          {"", "", "false"},
		"/":                 {"", "", "false"},
	} {
		name, args, ok := ButtonCommand(data)
		if name != want[0] || args != want[1] || (ok != (want[2] == "true")) {
			t.Errorf("%q: %q %q %v", data, name, args, ok)
		}
	}
}
