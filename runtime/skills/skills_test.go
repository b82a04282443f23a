package skills_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/skills"
)

// writeFile writes body to dir/rel, creating folders.
func writeFile(t testing.TB, dir, rel, body string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeSkill writes root/id/SKILL.md with the given frontmatter and body.
func writeSkill(t testing.TB, root, id, frontmatter, body string) string {
	t.Helper()
	return writeFile(t, root, id+"/SKILL.md", "---\n"+frontmatter+"\n---\n"+body)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

// project is a project folder with its catalog and what the catalog logs.
type project struct {
	dir    string
	skills string // dir/.claude/skills
	logs   *logbuf.Buffer
}

func newProject(t testing.TB) project {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	return project{dir: dir, skills: filepath.Join(dir, ".claude", "skills"), logs: &logbuf.Buffer{}}
}

func (p project) catalog(t testing.TB, paths ...string) *skills.Catalog {
	t.Helper()
	c, err := skills.New(skills.Options{ProjectDir: p.dir, Paths: paths, Logger: zerolog.New(p.logs)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ids(list []skills.Skill) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func byID(t *testing.T, list []skills.Skill, id string) skills.Skill {
	t.Helper()
	for _, s := range list {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no skill %q in %v", id, ids(list))
	return skills.Skill{}
}

func TestListFindsTheProjectsSkills(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "deploy", "name: deploy-staging\ndescription: Deploy the app to staging.\nallowed-tools: Bash(git:*), Read", "Run make deploy.\n")
	writeSkill(t, p.skills, "review", "description: Review a change.", "Look closely.\n")
	noDesc := writeSkill(t, p.skills, "broken", "name: broken", "no description\n")
	writeFile(t, p.skills, "notes/README.md", "a folder without SKILL.md is no skill")
	writeSkill(t, p.skills, ".hidden", "description: hidden folders are not skills", "")
	writeFile(t, p.skills, "stray.md", "a file next to the skill folders")
	writeSkill(t, p.skills, "two\nlines", "description: a folder name that would break the prompt's lines", "")

	list := p.catalog(t).List()
	if got := ids(list); !slices.Equal(got, []string{"deploy", "review"}) {
		t.Fatalf("ids = %v, want [deploy review]", got)
	}
	d := byID(t, list, "deploy")
	if d.Name != "deploy-staging" || d.Description != "Deploy the app to staging." ||
		!slices.Equal(d.AllowedTools, []string{"Bash(git:*)", "Read"}) {
		t.Errorf("deploy = %+v", d)
	}
	if d.Body != "" {
		t.Errorf("List read the body: %q", d.Body)
	}
	if r := byID(t, list, "review"); r.Name != "review" || r.AllowedTools != nil {
		t.Errorf("review = %+v, want the id as name and no allowed-tools", r)
	}
	logs := p.logs.String()
	if !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, noDesc) || !strings.Contains(logs, "no description") {
		t.Errorf("no warning naming %s in the log:\n%s", noDesc, logs)
	}
	// The warning is given once, not on every run.
	before := strings.Count(p.logs.String(), noDesc)
	cat := p.catalog(t)
	cat.List()
	cat.PromptSection()
	if n := strings.Count(p.logs.String(), noDesc) - before; n != 1 {
		t.Errorf("the warning about %s was logged %d times by one catalog, want once", noDesc, n)
	}
}

func TestFrontmatterVariants(t *testing.T) {
	cases := []struct {
		name, file string
		want       []string // allowed-tools; nil for none
		desc       string   // "" → the skill is skipped
	}{
		{"comma string", "---\ndescription: d\nallowed-tools: Bash, Read\n---\n", []string{"Bash", "Read"}, "d"},
		{"space string with arguments", "---\ndescription: d\nallowed-tools: Bash(git status:*) Bash(jq:*) Read\n---\n",
			[]string{"Bash(git status:*)", "Bash(jq:*)", "Read"}, "d"},
		{"yaml list", "---\ndescription: d\nallowed-tools:\n  - Bash(git add:*)\n  - mcp__github__get_issue\n---\n",
			[]string{"Bash(git add:*)", "mcp__github__get_issue"}, "d"},
		{"flow list", "---\ndescription: d\nallowed-tools: [Bash, Grep]\n---\n", []string{"Bash", "Grep"}, "d"},
		{"empty allowed-tools", "---\ndescription: d\nallowed-tools:\n---\n", nil, "d"},
		{"folded description", "---\ndescription: >\n  Two lines\n  of text.\n---\nbody", nil, "Two lines of text."},
		{"quoted, CRLF, BOM, other fields", "\xef\xbb\xbf---\r\nname: \"x\"\r\ndescription: \"Say: hi\"\r\nlicense: MIT\r\nmetadata:\r\n  a: 1\r\n---\r\nbody", nil, "Say: hi"},
		{"no description", "---\nname: x\n---\nbody", nil, ""},
		{"blank description", "---\ndescription: \"  \"\n---\n", nil, ""},
		{"no frontmatter", "# Just markdown\ndescription: d\n", nil, ""},
		{"not closed", "---\ndescription: d\n", nil, ""},
		{"bad yaml", "---\ndescription: [unclosed\n---\n", nil, ""},
		{"allowed-tools a map", "---\ndescription: d\nallowed-tools: {Bash: yes}\n---\n", nil, ""},
	}
	p := newProject(t)
	for i, c := range cases {
		writeFile(t, p.skills, fmt.Sprintf("s%02d/SKILL.md", i), c.file)
	}
	list := p.catalog(t).List()
	for i, c := range cases {
		id := fmt.Sprintf("s%02d", i)
		idx := slices.IndexFunc(list, func(s skills.Skill) bool { return s.ID == id })
		if c.desc == "" {
			if idx >= 0 {
				t.Errorf("%s: listed as %+v, want it skipped", c.name, list[idx])
			} else if !strings.Contains(p.logs.String(), filepath.Join(id, "SKILL.md")) {
				t.Errorf("%s: skipped without a warning naming the file", c.name)
			}
			continue
		}
		if idx < 0 {
			t.Errorf("%s: not listed (log: %s)", c.name, p.logs.String())
			continue
		}
		if s := list[idx]; s.Description != c.desc || !slices.Equal(s.AllowedTools, c.want) {
			t.Errorf("%s: description %q, allowed-tools %q; want %q, %q", c.name, s.Description, s.AllowedTools, c.desc, c.want)
		}
	}
}

func TestLoadReturnsTheBodyAndTheOtherFiles(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "pdf", "name: pdf-tools\ndescription: Work with PDFs.", "# PDF\n\nRun scripts/fill.py.\n")
	writeFile(t, p.skills, "pdf/scripts/fill.py", "print(1)")
	writeFile(t, p.skills, "pdf/reference.md", "more")
	writeFile(t, p.skills, "pdf/.cache/x", "hidden")
	cat := p.catalog(t)

	s, err := cat.Load("pdf")
	if err != nil {
		t.Fatal(err)
	}
	if s.Body != "# PDF\n\nRun scripts/fill.py.\n" || s.BodyCut != 0 {
		t.Errorf("body = %q (cut %d)", s.Body, s.BodyCut)
	}
	if !slices.Equal(s.Files, []string{"reference.md", "scripts/fill.py"}) {
		t.Errorf("files = %q, want the other files without SKILL.md and hidden ones", s.Files)
	}
	if byName, err := cat.Load("pdf-tools"); err != nil || byName.ID != "pdf" {
		t.Errorf("by name: %+v, %v", byName, err)
	}
	if _, err := cat.Load("nope"); !errors.Is(err, skills.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
	// An id is looked up, never joined into a path.
	if _, err := cat.Load("../proj/.claude/skills/pdf"); !errors.Is(err, skills.ErrNotFound) {
		t.Errorf("a path as id: %v, want ErrNotFound", err)
	}
}

func TestLoadCutsALongBody(t *testing.T) {
	p := newProject(t)
	body := strings.Repeat("é", skills.MaxBodyBytes) // two bytes each
	writeSkill(t, p.skills, "big", "description: big", body)
	s, err := p.catalog(t).Load("big")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Body) > skills.MaxBodyBytes || !strings.HasPrefix(body, s.Body) || int64(len(s.Body))+s.BodyCut != int64(len(body)) {
		t.Errorf("kept %d bytes, cut %d, of %d (max %d)", len(s.Body), s.BodyCut, len(body), skills.MaxBodyBytes)
	}
}

func TestPromptSection(t *testing.T) {
	p := newProject(t)
	cat := p.catalog(t)
	if got := cat.PromptSection(); got != "" {
		t.Errorf("no skills: %q, want nothing", got)
	}
	writeSkill(t, p.skills, "deploy", "description: Deploy the app.\n  Use when asked to ship.", "")
	writeSkill(t, p.skills, "review", "name: code-review\ndescription: Review a change.", "")
	got := cat.PromptSection()
	for _, want := range []string{"skills_load", "- deploy: Deploy the app. Use when asked to ship.", "- code-review: Review a change."} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "more") {
		t.Errorf("a short list says there is more:\n%s", got)
	}
}

func TestPromptSectionIsBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		desc string
	}{
		{"many skills", 100, "Short."},
		{"long descriptions", 30, strings.Repeat("word ", 200)},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t)
			for i := range c.n {
				writeSkill(t, p.skills, fmt.Sprintf("skill-%03d", i), "description: "+c.desc, "")
			}
			got := p.catalog(t).PromptSection()
			lines := strings.Count(got, "\n- ")
			if len(got) > skills.MaxPromptBytes || lines > skills.MaxPromptSkills || lines == 0 {
				t.Fatalf("%d bytes, %d skills listed; want at most %d bytes and %d skills", len(got), lines, skills.MaxPromptBytes, skills.MaxPromptSkills)
			}
			if want := fmt.Sprintf("… and %d more: call skills_list", c.n-lines); !strings.HasSuffix(got, want) {
				t.Errorf("ends %q, want %q", got[max(0, len(got)-60):], want)
			}
		})
	}
}

func TestAChangedSkillIsSeenOnTheNextCall(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "a", "description: first", "one")
	cat := p.catalog(t)
	if got := cat.List(); len(got) != 1 || got[0].Description != "first" {
		t.Fatalf("before: %+v", got)
	}
	// A longer text: the change is seen even where file times are coarse.
	writeSkill(t, p.skills, "a", "description: second version", "two")
	writeSkill(t, p.skills, "b", "description: new", "")
	list := cat.List()
	if got := ids(list); !slices.Equal(got, []string{"a", "b"}) || list[0].Description != "second version" {
		t.Errorf("after the edit: %+v", list)
	}
	if s, err := cat.Load("a"); err != nil || s.Body != "two" {
		t.Errorf("load after the edit: %q, %v", s.Body, err)
	}
	if !strings.Contains(cat.PromptSection(), "- b: new") {
		t.Error("a new skill is missing from the prompt")
	}
	if err := os.RemoveAll(filepath.Join(p.skills, "a")); err != nil {
		t.Fatal(err)
	}
	if got := ids(cat.List()); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after removing a: %v", got)
	}
}

func TestConfiguredPaths(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(filepath.Dir(p.dir), "shared")
	writeSkill(t, outside, "shared-skill", "description: from outside", "")
	writeSkill(t, filepath.Join(p.dir, "more"), "inside-skill", "description: from a project folder", "")
	absolute := filepath.Join(t.TempDir(), "abs")
	writeSkill(t, absolute, "abs-skill", "description: from an absolute path", "")

	got := ids(p.catalog(t, "more", "../shared", absolute).List())
	if !slices.Equal(got, []string{"inside-skill", "shared-skill", "abs-skill"}) {
		t.Errorf("ids = %v", got)
	}
	// Without the listing the outside folder is not read at all.
	if got := ids(p.catalog(t, "more").List()); !slices.Equal(got, []string{"inside-skill"}) {
		t.Errorf("unlisted: %v", got)
	}

	t.Setenv("HOME", filepath.Dir(outside))
	if got := ids(p.catalog(t, "~/shared").List()); !slices.Equal(got, []string{"shared-skill"}) {
		t.Errorf("~/shared: %v", got)
	}
	if _, err := skills.New(skills.Options{ProjectDir: p.dir, Paths: []string{" "}}); err == nil {
		t.Error("an empty path was accepted")
	}
}

func TestSymlinksOutOfTheProjectAreRefused(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(filepath.Dir(p.dir), "outside")
	writeSkill(t, outside, "evil", "description: outside the project", "secret instructions")
	writeFile(t, outside, "secret.md", "---\ndescription: a secret file\n---\nsecret")
	writeSkill(t, p.skills, "good", "description: inside", "")
	// A skill folder, and a SKILL.md, leading out of the project.
	symlink(t, filepath.Join(outside, "evil"), filepath.Join(p.skills, "evil"))
	symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(p.skills, "file", "SKILL.md"))
	// ".." through a link inside the project: still outside.
	symlink(t, "../../../outside/evil", filepath.Join(p.skills, "dotdot"))
	// A link that stays inside the project is fine.
	writeSkill(t, filepath.Join(p.dir, "lib"), "shared", "description: kept in lib", "")
	symlink(t, filepath.Join(p.dir, "lib", "shared"), filepath.Join(p.skills, "linked"))

	cat := p.catalog(t)
	if got := ids(cat.List()); !slices.Equal(got, []string{"good", "linked"}) {
		t.Errorf("ids = %v, want [good linked]", got)
	}
	for _, id := range []string{"evil", "file", "dotdot"} {
		if _, err := cat.Load(id); !errors.Is(err, skills.ErrNotFound) {
			t.Errorf("Load(%s) = %v, want ErrNotFound", id, err)
		}
		if !strings.Contains(p.logs.String(), filepath.Join(p.skills, id)) {
			t.Errorf("no warning names %s", id)
		}
	}

	// A configured folder inside the project that leads outside is refused too.
	symlink(t, outside, filepath.Join(p.dir, "linked-out"))
	if got := ids(p.catalog(t, "linked-out").List()); slices.Contains(got, "evil") {
		t.Errorf("a project path leading outside was read: %v", got)
	}
	// Listing the outside folder is what lets its skills in, however reached.
	if got := ids(p.catalog(t, "../outside").List()); !slices.Equal(got, []string{"dotdot", "evil", "file", "good", "linked"}) {
		t.Errorf("with ../outside listed: %v", got)
	}
}

func TestTheProjectsSkillsFolderMayNotLeadOutside(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(filepath.Dir(p.dir), "elsewhere")
	writeSkill(t, outside, "x", "description: x", "")
	symlink(t, outside, p.skills)
	if got := p.catalog(t).List(); len(got) != 0 {
		t.Errorf("listed %v through a .claude/skills leading outside", ids(got))
	}
	if !strings.Contains(p.logs.String(), "outside the project") {
		t.Errorf("no warning:\n%s", p.logs.String())
	}
}

func TestTheFirstFolderWinsAnId(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "dup", "description: project", "")
	writeSkill(t, filepath.Join(p.dir, "more"), "dup", "description: more", "")
	list := p.catalog(t, "more").List()
	if len(list) != 1 || list[0].Description != "project" {
		t.Errorf("list = %+v, want the project's own", list)
	}
}

func TestConcurrentUse(t *testing.T) {
	p := newProject(t)
	for i := range 5 {
		writeSkill(t, p.skills, fmt.Sprintf("s%d", i), "description: d", "body")
	}
	cat := p.catalog(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i%2 == 0 {
				// s0 and s2 change while others read; s1 stays as it is.
				writeSkill(t, p.skills, fmt.Sprintf("s%d", i%4), fmt.Sprintf("description: changed %d", i), "body")
			}
			_ = cat.PromptSection()
			if _, err := cat.Load("s1"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(cat.List()); n != 5 {
		t.Errorf("%d skills, want 5", n)
	}
}
