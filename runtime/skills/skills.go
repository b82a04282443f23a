// Package skills finds a project's skills as Claude Code lays them out: a
// folder per skill holding a SKILL.md, YAML frontmatter (name, description,
// optional allowed-tools) followed by Markdown instructions. Skills live in
// <project>/.claude/skills/<id>/ and in the folders ship.json lists under
// skills.paths (<path>/<id>/).
//
// Nothing is read at start-up: every List, Load and PromptSection looks at
// the folders again (a directory read and a few stats per skill, with the
// parsed frontmatter cached by file identity, time and size), so a skill
// added or edited while ship runs is seen by the next run.
package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// Layout and bounds.
const (
	// FileName is the file that makes a folder a skill.
	FileName = "SKILL.md"
	// ProjectFolder holds the project's own skills, relative to the project.
	ProjectFolder = ".claude/skills"
	// MaxBodyBytes bounds the instructions Load returns.
	MaxBodyBytes = 64 << 10
	// MaxFiles bounds the other files Load lists.
	MaxFiles = 200
	// MaxPromptSkills and MaxPromptBytes bound PromptSection; the rest is
	// one skills_list away.
	MaxPromptSkills = 40
	MaxPromptBytes  = 4 << 10
	// maxPromptLineRunes keeps one long description from crowding out the
	// others.
	maxPromptLineRunes = 200
)

// ErrNotFound is returned by Load for an id no skill has.
var ErrNotFound = errors.New("no such skill")

// Skill is one skill.
type Skill struct {
	// ID is the skill's folder name.
	ID string
	// Name is the frontmatter's name, the ID when it has none.
	Name string
	// Description says what the skill is for and when to use it (one
	// line).
	Description string
	// AllowedTools are the frontmatter's allowed-tools entries as written
	// (Claude Code's tool names); nil when it has none.
	AllowedTools []string
	// Dir is the skill's folder and Path its SKILL.md, symlinks resolved.
	Dir  string
	Path string

	// Only Load fills in the rest.

	// Body is the instructions after the frontmatter, at most
	// MaxBodyBytes; BodyCut counts the bytes left out.
	Body    string
	BodyCut int64
	// Files are the folder's other files, relative to Dir with "/"
	// separators, at most MaxFiles; MoreFiles counts the rest.
	Files     []string
	MoreFiles int
	// OutputSchema is the JSON Schema (JSON text) the output of a run that
	// loads the skill must match (frontmatter outputSchema, or the file
	// outputSchemaFile names); "" when the skill declares none.
	OutputSchema string
}

// Load returns the skill whose id (or, failing that, name) is id, with
// its instructions and the list of its other files.
func (c *Catalog) Load(id string) (Skill, error) {
	s, ok := find(c.List(), id)
	if !ok {
		return Skill{}, fmt.Errorf("loading skill %q: %w", id, ErrNotFound)
	}
	if err := readBody(&s); err != nil {
		return Skill{}, fmt.Errorf("loading skill %q: %w", s.ID, err)
	}
	files, more, err := listFiles(s.Dir)
	if err != nil {
		return Skill{}, fmt.Errorf("loading skill %q: listing its files: %w", s.ID, err)
	}
	s.Files, s.MoreFiles = files, more
	return s, nil
}

// find looks a skill up by id, then by name, then either ignoring case.
func find(list []Skill, id string) (Skill, bool) {
	id = strings.TrimSpace(id)
	for _, match := range []func(Skill) bool{
		func(s Skill) bool { return s.ID == id },
		func(s Skill) bool { return s.Name == id },
		func(s Skill) bool { return strings.EqualFold(s.ID, id) || strings.EqualFold(s.Name, id) },
	} {
		for _, s := range list {
			if match(s) {
				return s, true
			}
		}
	}
	return Skill{}, false
}

// readBody reads s.Path again and fills in the instructions; the header is
// re-read too, so what the model gets is the file as it is now.
func readBody(s *Skill) error {
	f, err := os.Open(s.Path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", s.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, headerReadBytes+MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, err)
	}
	yamlText, body, err := splitFrontmatter(b)
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, err)
	}
	h, err := parseHeader(yamlText)
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, err)
	}
	if h.Description == "" {
		return fmt.Errorf("reading %s: %w", s.Path, errNoDescription)
	}
	s.Name, s.Description, s.AllowedTools = h.Name, h.Description, h.AllowedTools
	if s.Name == "" {
		s.Name = s.ID
	}
	if err := loadSchema(s, h); err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, err)
	}
	headerBytes := int64(len(b) - len(body))
	if len(body) > MaxBodyBytes {
		body = body[:MaxBodyBytes]
		// Cut at a character boundary: no half character at the end.
		for i := 0; i < utf8.UTFMax-1 && len(body) > 0; i++ {
			if r, size := utf8.DecodeLastRune(body); r != utf8.RuneError || size > 1 {
				break
			}
			body = body[:len(body)-1]
		}
		s.BodyCut = max(st.Size()-headerBytes-int64(len(body)), 0)
	}
	s.Body = string(body)
	return nil
}

// listFiles lists dir's files other than its SKILL.md, relative, without
// hidden ones, not following symlinks.
func listFiles(dir string) (files []string, more int, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || d.IsDir() || rel == FileName {
			return err
		}
		if len(files) == MaxFiles {
			more++
			return nil
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, more, err
}

// PromptSection lists the skills for the system prompt, one "name:
// description" line each, at most MaxPromptSkills lines and MaxPromptBytes
// in all; "" when there are none.
func (c *Catalog) PromptSection() string {
	list := c.List()
	if len(list) == 0 {
		return ""
	}
	const intro = "Skills (instructions for particular tasks): when a task fits one, call skills_load with its name first and follow what it says.\n"
	const reserve = len("… and 99999 more: call skills_list\n")
	var b strings.Builder
	b.WriteString(intro)
	shown := 0
	for _, s := range list {
		line := "- " + truncate(s.Name+": "+s.Description, maxPromptLineRunes) + "\n"
		if shown == MaxPromptSkills || b.Len()+len(line)+reserve > MaxPromptBytes {
			break
		}
		b.WriteString(line)
		shown++
	}
	if more := len(list) - shown; more > 0 {
		fmt.Fprintf(&b, "… and %d more: call skills_list\n", more)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// newLogger is the catalog's logger, its lines marked as the skills'.
func newLogger(log zerolog.Logger) zerolog.Logger {
	return log.With().Str("component", "skills").Logger()
}
