package skills_test

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestSetPathsChangesTheFoldersRead: skills.paths edited while ship runs
// adds a folder's skills and drops another's from the next listing; a
// path that cannot be resolved changes nothing.
func TestSetPathsChangesTheFoldersRead(t *testing.T) {
	p := newProject(t)
	writeSkill(t, p.skills, "own", "description: the project's own", "")
	writeSkill(t, filepath.Join(p.dir, "a"), "from-a", "description: folder a", "")
	outside := filepath.Join(filepath.Dir(p.dir), "b")
	writeSkill(t, outside, "from-b", "description: folder b outside the project", "")

	c := p.catalog(t, "a")
	if got := ids(c.List()); !slices.Equal(got, []string{"own", "from-a"}) {
		t.Fatalf("before: %v", got)
	}
	if err := c.SetPaths([]string{"../b"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(c.List()); !slices.Equal(got, []string{"own", "from-b"}) {
		t.Errorf("after SetPaths: %v", got)
	}
	if _, err := c.Load("from-b"); err != nil {
		t.Errorf("loading a skill of the new folder: %v", err)
	}
	if err := c.SetPaths([]string{" "}); err == nil {
		t.Error("an empty path was accepted")
	}
	if got := ids(c.List()); !slices.Equal(got, []string{"own", "from-b"}) {
		t.Errorf("a refused SetPaths changed the folders: %v", got)
	}
}
