package policy

import "testing"

// TestPathArgumentsCannotClimbOut: a wildcard never stands for a ".."
// path segment, however the segment is spelled, and "." and "//" do not
// change what a path pattern matches.
func TestPathArgumentsCannotClimbOut(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{LayerGlobal: {allow: []string{
		"exec_shell(cat docs/*)", "exec_shell(cat ../shared/*)", "exec_shell(ls -la *)", "exec_shell(make test)",
		"exec_shell(git checkout main)", "exec_shell(./gradlew build)",
	}}})
	for _, tc := range []struct {
		arg  string
		want Verdict
	}{
		{"cat docs/a.md", Allow},
		{"cat docs/*.md", Allow},
		{"cat docs/.github/x.yml", Allow},
		{"cat ./docs/a.md", Allow},
		{"cat docs//a.md", Allow},
		{"cat docs/./a.md", Allow},
		{`cat "docs/a b.md"`, Allow},
		{"cat ../shared/a.md", Allow}, // the pattern spells this ".." out
		{"ls -la src", Allow},
		{"make test", Allow},
		{".//gradlew build", Allow},
		{"./gradlew build", Allow},

		{"./make test", Deny}, // a file in the folder, not make from PATH
		{"git checkout ./main", Deny},
		{"gradlew build", Deny},

		{"cat docs/../../env.sh", Deny},
		{"cat docs/../ship.json", Deny},
		{"cat docs/x/../../.env", Deny},
		{"cat docs/x/../a.md", Deny}, // no lexical shortcut: docs/x may be a symlink
		{"cat docs/..", Deny},
		{"cat docs/a.md/..", Deny},
		{"cat docs/./../x", Deny},
		{"cat docs//../x", Deny},
		{"cat docs/../", Deny},
		{"cat ./docs/../x", Deny},
		{`cat "docs/../x"`, Deny},
		{`cat 'docs/../x'`, Deny},
		{`cat docs/'..'/x`, Deny},
		{`cat docs/".."/x`, Deny},
		{`cat docs/.\./x`, Deny},
		{`cat docs/\.\./x`, Deny},
		{`cat docs/.''./x`, Deny},
		{"cat docs/.?/.?/env.sh", Deny}, // the shell's glob matches ".."
		{"cat docs/.[.]/x", Deny},
		{"cat docs/.*", Deny},
		{"cat docs/{..,x}/env.sh", Deny}, // bash brace expansion
		{"cat docs/${x:-..}/env.sh", Deny},
		{"cat docs/$x", Deny},
		{"cat docs/a.md ../../env.sh", Deny},
		{"cat docs/a.md x=../../env.sh", Deny},
		{"cat ../shared/../../env.sh", Deny},
		{"cat ../shared/../x", Deny},
		{"cat ../../shared/x", Deny},
		{"ls -la ..", Deny},
		{"ls -la src/../..", Deny},
	} {
		got := p.Decide(subj, Call{"exec_shell", tc.arg}, Narrowing{}, Deny)
		if got.Verdict != tc.want {
			t.Errorf("%q: got %+v, want %s", tc.arg, got, tc.want)
		}
	}
}

// TestDenyMatchesCleanedPaths: "//", "/./", a trailing "/." and ".." do
// not hide a denied path.
func TestDenyMatchesCleanedPaths(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{
		LayerRole:   {allow: []string{"exec_shell"}},
		LayerGlobal: {deny: []string{"exec_shell(cat /etc/shadow)", "exec_shell(rm -rf /)"}},
	})
	for _, arg := range []string{
		"cat /etc/shadow", "cat //etc/shadow", "cat /etc//shadow", "cat /etc/./shadow", "cat /etc/../etc/shadow",
		"cat /tmp/../../etc/shadow", `cat "/etc/../etc/shadow"`, "cat /etc/../etc//shadow", "rm -rf /", "rm -rf //", "rm -rf /.", "rm -rf /./",
		"rm -rf /tmp/..", "rm -rf '/'", "ls; rm -rf /tmp/../",
	} {
		got := p.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Deny)
		if got.Verdict != Deny || got.Layer != LayerGlobal {
			t.Errorf("%q: got %+v, want deny by a global rule", arg, got)
		}
	}
	for _, arg := range []string{"cat /etc/hosts", "rm -rf /tmp/x", "cat shadow"} {
		if got := p.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Deny); got.Verdict != Allow {
			t.Errorf("%q: got %+v, want allow", arg, got)
		}
	}
}
