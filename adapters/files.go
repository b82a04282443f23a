package adapters

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// ErrFileTooLarge is returned by ReadOutFile for a file over the limit.
var ErrFileTooLarge = errors.New("over the platform's size limit")

// ReadOutFile reads a file to send whole, but never more than limit bytes:
// a file that grew past the limit since chat_send_file checked it is
// refused (ErrFileTooLarge) rather than sent cut, and so is an empty one,
// which no platform takes. Each attempt of an upload reads it afresh.
func ReadOutFile(f dispatch.OutFile, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", f.Name, err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%s is %w of %d MB", f.Name, ErrFileTooLarge, limit>>20)
	case len(b) == 0:
		return nil, fmt.Errorf("%s is empty", f.Name)
	}
	return b, nil
}

// ButtonCommand reads a button's data as the chat command it spells:
// "/answer K7QM2X 2" → "answer", "K7QM2X 2" (a "@bot" suffix dropped, the
// name lower-cased). ok is false for data that is not a command.
func ButtonCommand(data string) (name, args string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(data), "/")
	if !ok {
		return "", "", false
	}
	word, args, _ := strings.Cut(rest, " ")
	name, _, _ = strings.Cut(word, "@")
	name = strings.ToLower(name)
	return name, strings.TrimSpace(args), name != ""
}
