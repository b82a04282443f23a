// Package guardrail checks a run's final output against the JSON Schema a
// scheduled task declares for it (seed 001's output guardrail): the output
// must be one JSON document that the schema accepts. The engine asks the
// model to repair an output that fails, at most MaxRepairs times, and
// otherwise rejects it; this package only reads and compiles schemas,
// checks outputs and words the notes.
package guardrail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxRepairs is how many times the model is asked to repair an output that
// does not match its schema before the output is rejected.
const MaxRepairs = 2

// maxSchemaBytes bounds a declared schema: a schema is a few fields, not a
// document store.
const maxSchemaBytes = 64 << 10

// ErrInvalidSchema: a declared schema is not a JSON Schema ship can use.
var ErrInvalidSchema = errors.New("invalid output schema")

// Schema is a compiled output schema.
type Schema struct {
	resolved *jsonschema.Resolved
}

// Compile reads raw (a JSON object) as a JSON Schema (draft 2020-12, or
// draft-07 when its $schema says so). Remote $refs are refused: a check
// must not depend on the network.
func Compile(raw json.RawMessage) (*Schema, error) {
	if len(raw) > maxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidSchema, len(raw), maxSchemaBytes)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: reading it: %w", ErrInvalidSchema, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return &Schema{resolved: r}, nil
}

// LocalFile reports whether f, a schema file's name (outputSchemaFile),
// is a relative path that stays inside the folder it is read from.
func LocalFile(f string) bool {
	clean := path.Clean(filepath.ToSlash(f))
	return !path.IsAbs(clean) && !filepath.IsAbs(f) && clean != ".." && !strings.HasPrefix(clean, "../")
}

// ReadFile reads the schema file f (a LocalFile) of folder dir and checks
// that it compiles.
func ReadFile(dir, f string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean(filepath.ToSlash(f)))))
	if err != nil {
		return nil, err
	}
	if _, err := Compile(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Check returns why output does not match the schema, or "" when it does.
// The output is one JSON document, optionally inside a Markdown code fence
// (```json … ```), which models often add; nothing else may surround it.
func (s *Schema) Check(output string) string {
	doc := unfence(output)
	if doc == "" {
		return "the output is empty; it must be one JSON document"
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	var v any
	if err := dec.Decode(&v); err != nil {
		return "the output is not valid JSON: " + err.Error()
	}
	if dec.More() {
		return "the output has text after its JSON document; send the JSON document alone"
	}
	if err := s.resolved.Validate(v); err != nil {
		return err.Error()
	}
	return ""
}

// Document is output without a Markdown code fence around it: what is
// delivered once the output is accepted.
func Document(output string) string { return unfence(output) }

// unfence trims output and takes a JSON document out of a code fence.
func unfence(output string) string {
	t := strings.TrimSpace(output)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return t
	}
	inner := t[3 : len(t)-3]
	nl := strings.IndexByte(inner, '\n')
	if nl < 0 {
		return t
	}
	if lang := strings.TrimSpace(inner[:nl]); lang != "" && lang != "json" {
		return t
	}
	return strings.TrimSpace(inner[nl+1:])
}

// RepairNote is what the model is told after its output failed the
// check: the errors and the output it gave, so it can send it again fixed.
// who is who declared the schema ("task daily-report").
func RepairNote(who, output, problem string, attempt int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "[output check of %s, repair %d of %d]\n", who, attempt, MaxRepairs)
	b.WriteString("Your final output did not match its JSON Schema, so it was NOT delivered. Errors:\n")
	b.WriteString(problem)
	b.WriteString("\n\nYour output was:\n")
	b.WriteString(clip(output, 4000))
	b.WriteString("\n\nSend the corrected output again with chat_send: one JSON document that matches the schema, nothing else.")
	return b.String()
}

// FailedMessage is what the chat is told when an output was rejected; who
// is who declared the schema ("task daily-report").
func FailedMessage(who, problem string) string {
	return fmt.Sprintf("The output of %s did not match its schema after %d repairs, so it was not delivered: %s",
		who, MaxRepairs, clip(problem, 500))
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
