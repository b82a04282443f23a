// Package docs_test keeps the manual navigable: every relative link in
// README.md and docs/*.md leads to a file that exists and, when it names a
// heading, to a heading that exists (by GitHub's anchor rules); the README
// stays a front page; and its test command is the one CI runs.
package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines keeps README.md a front page: the manual lives in docs/.
const maxReadmeLines = 320

// linkTarget matches the target of an inline Markdown link or image,
// "](target)"; the link's text may span lines, its target does not.
var linkTarget = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// inlineLink matches a whole inline link, whose text a heading's id keeps.
var inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingLine matches an ATX heading and captures its text.
var headingLine = regexp.MustCompile(`^#{1,6} +(.*?)#*\s*$`)

// manual lists README.md and every docs/*.md, relative to the repository root.
func manual(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatalf("listing docs: %v", err)
	}
	return append([]string{filepath.Join("..", "README.md")}, pages...)
}

// prose returns the lines of a Markdown file, with the lines of fenced code
// blocks blanked (a "# comment" there is no heading), so line numbers stay.
func prose(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	defer f.Close()
	var lines []string
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines = append(lines, "")
			continue
		}
		if fenced {
			lines = append(lines, "")
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	return lines
}

// anchor is GitHub's id for a heading: lower case, every character that is
// not a letter, digit, space, '-' or '_' removed, spaces turned into '-'.
// Inline code keeps its text (the backticks are punctuation and go), a
// link keeps its text.
func anchor(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every heading id of a Markdown file; a repeated heading
// gets "-1", "-2", … as on GitHub.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	seen := map[string]int{}
	ids := map[string]bool{}
	for _, line := range prose(t, file) {
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id := anchor(m[1])
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func TestAnchorFollowsGitHubsRules(t *testing.T) {
	for heading, want := range map[string]string{
		"Feishu / Lark":                                    "feishu--lark",
		"Running as a cluster (NATS JetStream)":            "running-as-a-cluster-nats-jetstream",
		"Leaving cluster mode: `ship export`":              "leaving-cluster-mode-ship-export",
		"The prompt, stable first":                         "the-prompt-stable-first",
		"Issue 30: what a provider can cache (2026-11-26)": "issue-30-what-a-provider-can-cache-2026-11-26",
		"[Linked](x.md) heading_name":                      "linked-heading_name",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestEveryLinkResolves follows every relative link of the manual: the file
// must exist, and a "#fragment" into a Markdown file must name one of its
// headings. A link that breaks when a section moves fails here, not for a
// reader.
func TestEveryLinkResolves(t *testing.T) {
	cache := map[string]map[string]bool{}
	links := 0
	for _, file := range manual(t) {
		for n, line := range prose(t, file) {
			for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: no such file %s", file, n+1, target, dest)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %q: a fragment into a file that is not Markdown", file, n+1, target)
					continue
				}
				ids, ok := cache[dest]
				if !ok {
					ids = anchors(t, dest)
					cache[dest] = ids
				}
				if !ids[frag] {
					t.Errorf("%s:%d: link %q: %s has no heading #%s", file, n+1, target, dest, frag)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("found no relative links: the manual's files were not read")
	}
}

// TestEveryPageIsReachableFromTheReadme: a page of docs/ that no chain of
// links from README.md reaches is a page nobody finds. A new page is
// linked from the README's feature map or from a page it links to (an
// operations page from docs/operations.md).
func TestEveryPageIsReachableFromTheReadme(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("resolving %s: %v", p, err)
		}
		return a
	}
	readme := filepath.Join("..", "README.md")
	reached := map[string]bool{abs(readme): true}
	todo := []string{readme}
	for len(todo) > 0 {
		file := todo[0]
		todo = todo[1:]
		for _, line := range prose(t, file) {
			for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
				path, _, _ := strings.Cut(m[1], "#")
				if path == "" || strings.Contains(path, "://") || !strings.HasSuffix(path, ".md") {
					continue
				}
				dest := filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if !reached[abs(dest)] {
					reached[abs(dest)] = true
					todo = append(todo, dest)
				}
			}
		}
	}
	for _, page := range manual(t)[1:] {
		if !reached[abs(page)] {
			t.Errorf("docs/%s is linked from nowhere that README.md leads to: add it to the feature map or a page's index", page)
		}
	}
}

// TestReadmeIsAFrontPage keeps README.md short enough to read first.
func TestReadmeIsAFrontPage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatalf("reading README.md: %v", err)
	}
	if n := strings.Count(string(data), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, at most %d: move detail into docs/", n, maxReadmeLines)
	}
}

// TestReadmeRunsTheTestsCIRuns: the Quick start's test command is the one
// .ci/run ends with, so "the tests pass" means the same thing to a newcomer
// and to CI.
func TestReadmeRunsTheTestsCIRuns(t *testing.T) {
	const command = "go test -race ./..."
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatalf("reading README.md: %v", err)
	}
	if !strings.Contains(string(readme), "```sh\n"+command+"\n```") {
		t.Errorf("README.md's Quick start does not show %q as its test command", command)
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatalf("reading .ci/run: %v", err)
	}
	if !strings.Contains(string(ci), "\n"+command+"\n") {
		t.Errorf(".ci/run does not run %q", command)
	}
	if !strings.Contains(string(readme), "```sh\ngo run ./cmd/ship start --offline\n```") {
		t.Error("README.md's Quick start does not show how to run the bot offline")
	}
}
