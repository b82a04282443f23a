package skills

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/frontmatter"
	"gopkg.in/yaml.v3"
)

// Bounds of what is read from a SKILL.md.
const (
	// maxFrontmatterBytes bounds the YAML header: Claude Code caps a
	// description at 1024 characters, so a header far larger than this is
	// a mistake, not a skill.
	maxFrontmatterBytes = 32 << 10
	// maxDescriptionRunes is Claude Code's limit on a description.
	maxDescriptionRunes = 1024
)

// header is what ship reads of a SKILL.md's frontmatter. Other fields
// (license, model, metadata, ...) are Claude Code's or the author's and
// are ignored.
type header struct {
	Name         string
	Description  string
	AllowedTools []string
	// OutputSchema is ship's own field: the JSON Schema (as JSON text) the
	// output of a run that loaded the skill must match; OutputSchemaFile
	// names a file of the skill's folder holding one instead.
	OutputSchema     string
	OutputSchemaFile string
}

// splitFrontmatter separates the YAML header from the body. b may be a
// prefix of the file (maxFrontmatterBytes and more): the header must close
// within it.
func splitFrontmatter(b []byte) (yamlText, body []byte, err error) {
	yamlText, body, err = frontmatter.Split(b)
	switch {
	case errors.Is(err, frontmatter.ErrMissing):
		return nil, nil, errors.New("no frontmatter (the file must start with a line \"---\", then name and description, then \"---\")")
	case errors.Is(err, frontmatter.ErrUnclosed):
		return nil, nil, fmt.Errorf("frontmatter not closed: a line \"---\" must end it within the first %d KiB", maxFrontmatterBytes>>10)
	}
	return yamlText, body, err
}

// parseHeader reads the frontmatter fields ship uses.
func parseHeader(yamlText []byte) (header, error) {
	var raw struct {
		Name         yaml.Node `yaml:"name"`
		Description  yaml.Node `yaml:"description"`
		AllowedTools yaml.Node `yaml:"allowed-tools"`
		OutputSchema yaml.Node `yaml:"outputSchema"`
		SchemaFile   yaml.Node `yaml:"outputSchemaFile"`
	}
	if err := yaml.Unmarshal(yamlText, &raw); err != nil {
		return header{}, fmt.Errorf("reading the frontmatter: %w", err)
	}
	var h header
	var err error
	if h.Name, err = scalar(raw.Name, "name"); err != nil {
		return header{}, err
	}
	if h.Description, err = scalar(raw.Description, "description"); err != nil {
		return header{}, err
	}
	h.Name = oneLine(h.Name)
	h.Description = truncate(oneLine(h.Description), maxDescriptionRunes)
	if h.AllowedTools, err = toolList(raw.AllowedTools); err != nil {
		return header{}, err
	}
	if h.OutputSchema, err = outputSchema(raw.OutputSchema); err != nil {
		return header{}, err
	}
	if h.OutputSchemaFile, err = scalar(raw.SchemaFile, "outputSchemaFile"); err != nil {
		return header{}, err
	}
	return h, checkSchemaFile(h)
}

// scalar returns a scalar field's text; an absent or null field is "".
func scalar(n yaml.Node, field string) (string, error) {
	switch {
	case n.Kind == 0, n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "", nil
	case n.Kind == yaml.ScalarNode:
		return n.Value, nil
	}
	return "", fmt.Errorf("frontmatter field %s must be text", field)
}

// toolList reads allowed-tools as Claude Code accepts it: one string
// ("Bash, Read" or "Bash(git:*) Read") or a list of strings.
func toolList(n yaml.Node) ([]string, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		return splitTools(n.Value), nil
	case yaml.SequenceNode:
		var out []string
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return nil, errors.New("frontmatter field allowed-tools must be a string or a list of strings")
			}
			out = append(out, splitTools(item.Value)...)
		}
		return out, nil
	}
	return nil, errors.New("frontmatter field allowed-tools must be a string or a list of strings")
}

// splitTools splits a tool list at commas and blanks outside parentheses,
// so "Bash(git status:*), Read" is two entries.
func splitTools(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
	}
	for i, c := range s {
		switch {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth == 0 && (c == ',' || unicode.IsSpace(c)):
			flush(i)
			start = i + utf8.RuneLen(c)
		}
	}
	flush(len(s))
	return out
}

// oneLine collapses every run of white space (newlines included) to one
// space: a folded YAML description becomes one line of the prompt.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
