package tasks

import (
	"fmt"

	"github.com/shipmyagent/ship/runtime/guardrail"
	"github.com/shipmyagent/ship/runtime/turn"
)

// validateOutput checks a task's output guardrail: at most one of
// outputSchema and outputSchemaFile, an inline schema that compiles, and a
// file path inside the project.
func (t Task) validateOutput() error {
	if t.OutputSchema != "" && t.OutputSchemaFile != "" {
		return fmt.Errorf("%w: outputSchema and outputSchemaFile: give one of them", ErrInvalid)
	}
	if t.OutputSchema != "" {
		if _, err := guardrail.Compile([]byte(t.OutputSchema)); err != nil {
			return fmt.Errorf("%w: outputSchema: %w", ErrInvalid, err)
		}
	}
	if f := t.OutputSchemaFile; f != "" {
		if !guardrail.LocalFile(f) {
			return fmt.Errorf("%w: outputSchemaFile %q must be a path inside the project folder, like schemas/report.json", ErrInvalid, clip(f, 80))
		}
	}
	return nil
}

// outputCheck is the guardrail a run of t carries (nil when t declares
// none): the schema file is read when the task fires, so an edited file
// counts from the next run. project is the project folder.
func (t Task) outputCheck(project string) (*turn.OutputCheck, error) {
	raw := []byte(t.OutputSchema)
	if t.OutputSchemaFile != "" {
		b, err := guardrail.ReadFile(project, t.OutputSchemaFile)
		if err != nil {
			return nil, fmt.Errorf("reading outputSchemaFile of task %s: %w", t.Name, err)
		}
		raw = b
	}
	if len(raw) == 0 {
		return nil, nil
	}
	return &turn.OutputCheck{Kind: turn.CheckTask, Name: t.Name, Schema: raw}, nil
}
