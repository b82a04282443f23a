package skills

import (
	"encoding/json"
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/shipmyagent/ship/runtime/guardrail"
)

// outputSchema reads the outputSchema field (an object in YAML or inline
// JSON) as JSON text, checked to be a schema ship can use; "" when absent.
func outputSchema(n yaml.Node) (string, error) {
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return "", nil
	}
	if n.Kind != yaml.MappingNode {
		return "", errors.New("frontmatter field outputSchema must be an object (a JSON Schema)")
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		return "", fmt.Errorf("frontmatter field outputSchema: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("frontmatter field outputSchema: %w", err)
	}
	if _, err := guardrail.Compile(raw); err != nil {
		return "", fmt.Errorf("frontmatter field outputSchema: %w", err)
	}
	return string(raw), nil
}

// checkSchemaFile refuses both schema fields at once and a schema file
// outside the skill's folder.
func checkSchemaFile(h header) error {
	f := h.OutputSchemaFile
	if f == "" {
		return nil
	}
	if h.OutputSchema != "" {
		return errors.New("frontmatter fields outputSchema and outputSchemaFile: give one of them")
	}
	if !guardrail.LocalFile(f) {
		return fmt.Errorf("frontmatter field outputSchemaFile %q must be a file inside the skill's folder", f)
	}
	return nil
}

// loadSchema fills in s.OutputSchema from h, reading the schema file (in
// the skill's folder) when h names one.
func loadSchema(s *Skill, h header) error {
	s.OutputSchema = h.OutputSchema
	if h.OutputSchemaFile == "" {
		return nil
	}
	b, err := guardrail.ReadFile(s.Dir, h.OutputSchemaFile)
	if err != nil {
		return fmt.Errorf("reading outputSchemaFile: %w", err)
	}
	s.OutputSchema = string(b)
	return nil
}
