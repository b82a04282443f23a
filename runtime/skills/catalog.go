package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/rs/zerolog"
)

// Bounds of one scan.
const (
	// maxSkillsPerFolder bounds the work a run's scan does on a folder
	// that is not what it seems (a checkout of thousands of folders).
	maxSkillsPerFolder = 1000
	// headerReadBytes is what is read of a SKILL.md to find its header.
	headerReadBytes = maxFrontmatterBytes + 1024
	// maxWarned bounds the warnings remembered so each is logged once.
	maxWarned = 256
)

var errNoDescription = errors.New("no description in the frontmatter (the model chooses skills by it)")

// Options configure a Catalog.
type Options struct {
	// ProjectDir is the project folder: its .claude/skills is always read,
	// and relative Paths are relative to it.
	ProjectDir string
	// Paths are more skill folders (ship.json skills.paths). "~/" is the
	// home folder. A folder outside the project is read only when listed
	// here.
	Paths  []string
	Logger zerolog.Logger
}

// Catalog is the project's skills. It is safe for concurrent use.
type Catalog struct {
	project     string // absolute, cleaned
	projectReal string // symlinks resolved, where they can be
	roots       []root
	log         zerolog.Logger

	mu     sync.Mutex
	cache  map[string]cached // by SKILL.md path in its resolved skills folder
	warned map[string]bool
}

// root is a folder of skill folders.
type root struct {
	dir   string // absolute, cleaned
	label string // as configured, for the log
	// listed: skills.paths names it and it lies outside the project, so
	// the folder it resolves to is a place skills may come from.
	listed bool
}

// cached is one SKILL.md as last seen.
type cached struct {
	info  fs.FileInfo
	skill Skill // without Body and Files
	err   error // why the file is no skill
}

// New returns the catalog of a project. It reads nothing yet: start-up
// stays fast, and skills added later are seen all the same.
func New(opts Options) (*Catalog, error) {
	project, err := filepath.Abs(opts.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("resolving the project folder for skills: %w", err)
	}
	c := &Catalog{
		project:     project,
		projectReal: realPath(project),
		log:         newLogger(opts.Logger),
		cache:       map[string]cached{},
		warned:      map[string]bool{},
	}
	if c.roots, err = c.rootsOf(opts.Paths); err != nil {
		return nil, err
	}
	return c, nil
}

// rootsOf is the project's .claude/skills and then each of paths.
func (c *Catalog) rootsOf(paths []string) ([]root, error) {
	roots := []root{{dir: filepath.Join(c.project, filepath.FromSlash(ProjectFolder)), label: ProjectFolder}}
	for i, p := range paths {
		dir, err := c.resolvePath(p)
		if err != nil {
			return nil, fmt.Errorf("reading skills.paths[%d]: %w", i, err)
		}
		if slices.ContainsFunc(roots, func(r root) bool { return r.dir == dir }) {
			continue
		}
		roots = append(roots, root{dir: dir, label: p, listed: !within(dir, c.project)})
	}
	return roots, nil
}

// SetPaths makes paths the skills.paths folders (a configuration reload):
// the next List, Load or prompt reads them. A path that cannot be resolved
// changes nothing.
func (c *Catalog) SetPaths(paths []string) error {
	roots, err := c.rootsOf(paths)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roots = roots
	return nil
}

// resolvePath makes a skills.paths entry absolute: "~/" is the home
// folder, a relative path is relative to the project.
func (c *Catalog) resolvePath(p string) (string, error) {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return "", errors.New("empty path")
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expanding %q: %w", p, err)
		}
		p = filepath.Join(home, p[1:])
	case !filepath.IsAbs(p):
		p = filepath.Join(c.project, p)
	}
	return filepath.Clean(p), nil
}

// List returns every skill: the project's .claude/skills first, then each
// skills.paths folder in order, by id within a folder. Where two folders
// hold the same id the first wins.
func (c *Catalog) List() []Skill {
	c.mu.Lock()
	defer c.mu.Unlock()
	bounds := c.bounds()
	seen := map[string]bool{}
	ids := map[string]string{}
	var out []Skill
	for _, r := range c.roots {
		for _, s := range c.scanRoot(r, bounds, seen) {
			if first, dup := ids[s.ID]; dup {
				c.warnOnce("skill skipped: another folder has a skill of that id", s.Path, "kept", first)
				continue
			}
			ids[s.ID] = s.Path
			out = append(out, s)
		}
	}
	for k := range c.cache {
		if !seen[k] {
			delete(c.cache, k)
		}
	}
	return out
}

// bounds are the folders a skill's files may resolve into: the project
// and every folder outside it that skills.paths lists.
func (c *Catalog) bounds() []string {
	out := []string{c.projectReal}
	for _, r := range c.roots {
		if r.listed {
			if real, err := filepath.EvalSymlinks(r.dir); err == nil {
				out = append(out, real)
			}
		}
	}
	return out
}

// scanRoot reads one folder of skill folders. Failures are logged, once
// per file and state, and leave the skill out: one broken skill never
// hides the others.
func (c *Catalog) scanRoot(r root, bounds []string, seen map[string]bool) []Skill {
	real, err := filepath.EvalSymlinks(r.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		c.warnOnce("skills folder unreadable", r.dir, "error", err.Error())
		return nil
	case !inAny(real, bounds):
		c.warnOnce("skills folder skipped: it leads outside the project; list the folder it leads to in skills.paths to use it",
			r.dir, "leadsTo", real)
		return nil
	}
	entries, err := os.ReadDir(real)
	if err != nil {
		c.warnOnce("skills folder unreadable", r.dir, "error", err.Error())
		return nil
	}
	if len(entries) > maxSkillsPerFolder {
		c.warnOnce(fmt.Sprintf("skills folder has more than %d entries; the rest are ignored", maxSkillsPerFolder), r.dir)
		entries = entries[:maxSkillsPerFolder]
	}
	var out []Skill
	for _, e := range entries {
		id := e.Name()
		if strings.HasPrefix(id, ".") || (!e.IsDir() && e.Type()&fs.ModeSymlink == 0) {
			continue
		}
		if strings.ContainsFunc(id, unicode.IsControl) {
			// The id is shown to the model as a line of the prompt.
			c.warnOnce("skill skipped: its folder name has a control character", filepath.Join(real, id))
			continue
		}
		linked := e.Type()&fs.ModeSymlink != 0
		if s, ok := c.skillAt(filepath.Join(real, id, FileName), id, linked, bounds, seen); ok {
			out = append(out, s)
		}
	}
	return out
}

// skillAt reads the SKILL.md at md (in a resolved skills folder), or
// takes it from the cache when the file is the one seen last time. Only a
// skill that involves a symlink (linked is its folder's) costs more than
// one lstat.
func (c *Catalog) skillAt(md, id string, linked bool, bounds []string, seen map[string]bool) (Skill, bool) {
	info, err := os.Lstat(md)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Skill{}, false // a folder without SKILL.md is no skill
	case err != nil:
		c.warnOnce("skill skipped: its SKILL.md is unreadable", md, "error", err.Error())
		return Skill{}, false
	}
	real := md
	if linked || info.Mode()&fs.ModeSymlink != 0 {
		if real, err = filepath.EvalSymlinks(md); err == nil {
			info, err = os.Stat(real)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.warnOnce("skill skipped: its SKILL.md is a broken link", md)
			return Skill{}, false
		case err != nil:
			c.warnOnce("skill skipped: its SKILL.md is unreadable", md, "error", err.Error())
			return Skill{}, false
		case !inAny(real, bounds):
			c.warnOnce("skill skipped: its SKILL.md leads outside the project; list the folder it leads to in skills.paths to use it",
				md, "leadsTo", real)
			return Skill{}, false
		}
	}
	if !info.Mode().IsRegular() {
		c.warnOnce("skill skipped: its SKILL.md is not a regular file", md)
		return Skill{}, false
	}
	seen[md] = true
	if prev, ok := c.cache[md]; ok && prev.skill.Path == real && sameFile(prev.info, info) {
		return prev.skill, prev.err == nil
	}
	s := Skill{ID: id, Dir: filepath.Dir(real), Path: real}
	h, err := readHeader(real)
	if err == nil && h.Description == "" {
		err = errNoDescription
	}
	if err != nil {
		// Logged once: the cache remembers the failure until the file
		// changes.
		c.log.Warn().Str("file", md).Err(err).Msg("skill skipped")
	} else {
		s.Name, s.Description, s.AllowedTools = h.Name, h.Description, h.AllowedTools
		if s.Name == "" {
			s.Name = id
		}
	}
	c.cache[md] = cached{info: info, skill: s, err: err}
	return s, err == nil
}

// sameFile reports whether a file is unchanged: the same file (not
// replaced by a rename), with the same time and size.
func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// readHeader reads the frontmatter of a SKILL.md, not its body.
func readHeader(path string) (header, error) {
	f, err := os.Open(path)
	if err != nil {
		return header{}, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, headerReadBytes))
	if err != nil {
		return header{}, fmt.Errorf("reading %s: %w", path, err)
	}
	yamlText, _, err := splitFrontmatter(b)
	if err != nil {
		return header{}, err
	}
	return parseHeader(yamlText)
}

// warnOnce logs a warning about a file the first time it is seen; kv are
// more fields, key and value.
func (c *Catalog) warnOnce(msg, path string, kv ...string) {
	key := msg + "\x00" + path
	if c.warned[key] {
		return
	}
	if len(c.warned) >= maxWarned {
		clear(c.warned)
	}
	c.warned[key] = true
	ev := c.log.Warn().Str("file", path)
	for i := 0; i+1 < len(kv); i += 2 {
		ev = ev.Str(kv[i], kv[i+1])
	}
	ev.Msg(msg)
}

// realPath resolves symlinks where it can.
func realPath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

// inAny reports whether p lies within one of dirs.
func inAny(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(p, d) })
}

// within reports whether the cleaned absolute path p is dir or lies below
// it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
