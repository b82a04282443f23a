package mcp

import (
	"slices"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/config"
)

func TestBackoffDoublesWithJitterUpToTheCap(t *testing.T) {
	lo, hi := time.Second, time.Minute
	for n, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		for range 50 {
			if d := backoff(lo, hi, n); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %v, want between %v and %v", n, d, want/2, want)
			}
		}
	}
	for range 50 {
		if d := backoff(lo, hi, 40); d < hi/2 || d > hi {
			t.Fatalf("backoff(40) = %v, want it capped at %v", d, hi)
		}
	}
}

func TestChildEnvDropsSecretsAndAddsTheServersOwn(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "LLM_API_KEY=sk-1", "HOME=/h", "TOKEN=parent"}, []string{"LLM_API_KEY"},
		map[string]string{"TOKEN": "own", "B": "2"})
	want := []string{"PATH=/bin", "HOME=/h", "B=2", "TOKEN=own"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}

func TestRedactorHidesHeaderTokensEnvValuesAndTheURLsQuery(t *testing.T) {
	r := newRedactor(config.MCPServer{
		URL:     "https://user:pa55word@mcp.example.com/mcp?key=k-123456",
		Headers: map[string]string{"Authorization": "Bearer ghp_abcdef"},
		Env:     map[string]string{"DEBUG": "1"},
	}, []string{"sk-ship-key"})
	in := `Post "https://user:pa55word@mcp.example.com/mcp?key=k-123456": 401 for ghp_abcdef (sk-ship-key), debug 1`
	want := `Post "https://mcp.example.com/mcp": 401 for <redacted> (<redacted>), debug 1`
	if got := r.text(in); got != want {
		t.Errorf("redacted = %q\nwant       %q", got, want)
	}
	if got := r.text("key k-123456 and pa55word"); got != "key <redacted> and <redacted>" {
		t.Errorf("redacted = %q", got)
	}
}
