package policy

import (
	"strings"
	"testing"
)

// TestCommandWordMustBeLiteral: a command word the shell computes (from a
// variable, a substitution, a glob or a brace expansion) is refused
// whatever the rules say, and assignments before a command do not hide it
// from deny rules however many there are.
func TestCommandWordMustBeLiteral(t *testing.T) {
	p, _ := layered(t, map[Layer]lists{
		LayerRole:   {allow: []string{"exec_shell"}},
		LayerGlobal: {deny: []string{"exec_shell(rm *)"}},
	})
	many := strings.Repeat("A=1 ", 20)
	for _, tc := range []struct {
		arg, why string // why: a part of the reason; "" for deny by the rule
	}{
		{"x=rm; $x -rf /", "$x"},
		{"${x} -rf /", "${x}"},
		{`"$x" -rf /`, `"$x"`},
		{"$(echo rm) -rf /", "$(echo rm)"},
		{"`echo rm` -rf /", "`echo rm`"},
		{"/bin/r? -rf /", "/bin/r?"},
		{"r[m] -rf /", "r[m]"},
		{"r{m,} -rf /", "r{m,}"},
		{"2>/dev/null $x -rf /", "$x"},
		{many + "$x -rf /", "$x"},
		{"env $x -rf /", "$x"},
		{`sudo "$x" -rf /`, `"$x"`},
		{"nice -n 5 $x -rf /", "$x"},
		{`echo "$($x -rf /)"`, "$x"},
		{"echo ${y:-$($x -rf /)}", "$x"},
		{"if true; then $x -rf /; fi", "$x"},
		{"( $x -rf / )", "$x"},
		{"{ $x -rf /; }", "$x"},
		{"true && $x -rf /", "$x"},
		{"cat <<EOF\n$($x -rf /)\nEOF", "$x"},
		{"echo x # it's\n$x -rf /\n'", "$x"},
		{"echo $((echo a); ($x -rf /))", "$x"}, // bash runs this as commands
		{"echo $(($x -rf /) )", "$x"},
		{`$'\x72\x6d' -rf /`, `$'\x72\x6d'`},
		{"exec $x", "$x"},
		{"$HOME/bin/tool", "$HOME/bin/tool"},
		{"${EDITOR:-vi} notes", "${EDITOR:-vi}"},
		{"echo $(case y in y) $x -rf /;; esac)", "$x"},
		{"function f { $x -rf /; }; f", "$x"},
		{"time -p $x -rf /", "$x"},
		{"A+=1 $x -rf /", "$x"},
		{`sh -c "$x"`, `"$x"`},
		{"eval $x", "$x"},
		{"cat <($x -rf /)", "$x"},
		{`echo "abc`, "does not parse"},
		{"echo $(ls", "does not parse"},

		{many + "rm -rf /", ""},
		{"env " + many + "rm -rf /", ""},
		{"nice nice nice nice nice nice nice nice nice rm -rf /", ""},
		{"r\\\nm -rf /", ""},
		{`\rm -rf /`, ""},
		{`r''m -rf /`, ""},
		{`"rm" -rf /`, ""},
	} {
		got := p.Decide(subj, Call{"exec_shell", tc.arg}, Narrowing{}, Deny)
		switch {
		case got.Verdict != Deny:
			t.Errorf("%q: got %+v, want deny", tc.arg, got)
		case tc.why == "" && got.Rule != "exec_shell(rm *)":
			t.Errorf("%q: got %+v, want deny by exec_shell(rm *)", tc.arg, got)
		case tc.why != "" && !strings.Contains(got.Reason, tc.why):
			t.Errorf("%q: reason %q does not mention %q", tc.arg, got.Reason, tc.why)
		}
	}
	for _, arg := range []string{
		"echo $x", "git log --format=%H", "awk '{print $1}' f", `echo "$(date)"`, "x=$(date) echo ok",
		"echo $((1 + $n))", "cat <<'EOF'\n$x -rf /\nEOF", "echo \"it's\" # don't", "FOO=bar make test",
		"for f in a b; do echo $f; done", "case $x in a) echo a;; esac", "f() { echo hi; }; f", "ls 2>&1 | wc -l",
		"cat <<EOF\n$HOME\nEOF", "timeout 5 ls", "nohup sleep 1", "echo rm", "echo $(( $(date +%s) - 1 ))",
		"echo $(( (1+2)*3 ))", "[ -f x ] && echo y", "xargs -I{} echo {}", `'e'"cho" ok`, "echo a\\\n$x",
		"echo $(case y in y) echo yes;; esac)", "sh -c 'echo $1' _ \"$x\"", "bash -lc 'git status'", "time ls",
		"git commit -m \"$(cat <<'EOF'\nfix: it's $x\nEOF\n)\"", "cd \"$(git rev-parse --show-toplevel)\" && make",
		"for f in *.go; do gofmt -l \"$f\"; done", "while read -r l; do echo \"$l\"; done < f", "exec 3>&1",
	} {
		if got := p.Decide(subj, Call{"exec_shell", arg}, Narrowing{}, Deny); got.Verdict != Allow {
			t.Errorf("%q: got %+v, want allow", arg, got)
		}
	}
}
