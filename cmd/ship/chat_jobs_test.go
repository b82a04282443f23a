package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/shipclient"
)

func TestJobLines(t *testing.T) {
	exit := func(n int) *int { return &n }
	cases := []struct {
		ev   shipclient.JobEvent
		want string
	}{
		{shipclient.JobEvent{Type: "job_started", JobID: "J3", Label: "exec_shell `make test`"}, "⚙ job J3 started: exec_shell `make test`"},
		{shipclient.JobEvent{Type: "job_finished", JobID: "J3", State: "done", ExitCode: exit(0), DurationMs: 20_400}, "⚙ job J3 done after 20s (exit 0)"},
		{shipclient.JobEvent{Type: "job_finished", JobID: "J3", State: "failed", ExitCode: exit(2), DurationMs: 1_000}, "⚙ job J3 failed after 1s (exit 2)"},
		{shipclient.JobEvent{Type: "job_finished", JobID: "J3", State: "failed", ExitCode: exit(-1), DurationMs: 1_000}, "⚙ job J3 failed after 1s"},
		{shipclient.JobEvent{Type: "job_finished", JobID: "J3", State: "cancelled", CancelledBy: "@al", ExitCode: exit(-1), DurationMs: 5_000}, "⚙ job J3 cancelled by @al after 5s"},
		{shipclient.JobEvent{Type: "job_finished", JobID: "J3", State: "interrupted", ExitCode: exit(-1)}, "⚙ job J3 interrupted: ship stopped while it ran"},
		// What a model wrote cannot drive the terminal.
		{shipclient.JobEvent{Type: "job_started", JobID: "J4", Label: "exec_shell `echo \x1b[2J\x1b]0;pwned\x07\u202eok\nnext`"},
			"⚙ job J4 started: exec_shell `echo [2J]0;pwnedok next`"},
	}
	for _, c := range cases {
		if got := jobLine(c.ev); got != c.want {
			t.Errorf("jobLine(%+v)\n got %q\nwant %q", c.ev, got, c.want)
		}
	}
}

func TestJobLinesWaitForTheReplyLineToEnd(t *testing.T) {
	var out bytes.Buffer
	lw := &lineWriter{w: &out}
	fmt.Fprint(lw, "echo: hal")
	lw.line("⚙ job J1 done after 1s (exit 0)")
	fmt.Fprint(lw, "f a line\n")
	lw.line("⚙ job J2 started: x")
	fmt.Fprintln(lw, "— metrics")
	want := "echo: half a line\n⚙ job J1 done after 1s (exit 0)\n⚙ job J2 started: x\n— metrics\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant\n%q", out.String(), want)
	}
}

// TestWatchJobsResumesAfterADrop: the first stream ends after a job
// started; the watch comes back with Last-Event-ID, so the job's end (sent
// meanwhile) is shown once and the start is not repeated. A 401 ends it.
func TestWatchJobsResumesAfterADrop(t *testing.T) {
	var mu sync.Mutex
	var resumedFrom []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/sse/api:chat:cli" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		resumedFrom = append(resumedFrom, r.Header.Get("Last-Event-ID"))
		n := len(resumedFrom)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch n {
		case 1:
			fmt.Fprint(w, "id: 7\ndata: {\"type\":\"content\",\"chatKey\":\"api:chat:cli\",\"content\":\"x\"}\n\n")
			fmt.Fprint(w, "id: 8\ndata: {\"type\":\"job_started\",\"chatKey\":\"api:chat:cli\",\"jobId\":\"J1\",\"label\":\"exec_shell `make`\",\"state\":\"running\"}\n\n")
		case 2:
			fmt.Fprint(w, ": keep-alive\n\nid: 9\ndata: {\"type\":\"job_finished\",\"chatKey\":\"api:chat:cli\",\"jobId\":\"J1\",\"state\":\"done\",\"exitCode\":0,\"durationMs\":3000}\n\n")
		default:
			http.Error(w, `{"error":{"code":"unauthorized","message":"token revoked"}}`, http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	client, err := shipclient.New(shipclient.Options{BaseURL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	s := chatSession{client: client, chatKey: "api:chat:cli"}
	var lines []string
	var delays []time.Duration
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watchJobs(context.Background(), func(l string) { lines = append(lines, l) }, ready,
			func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil },
			func() float64 { return 0.5 })
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the watch did not end on 401")
	}
	select {
	case <-ready:
	default:
		t.Error("ready was never closed")
	}
	want := "⚙ job J1 started: exec_shell `make`\n⚙ job J1 done after 3s (exit 0)"
	if strings.Join(lines, "\n") != want {
		t.Errorf("lines %q", lines)
	}
	if strings.Join(resumedFrom, ",") != ",8,9" {
		t.Errorf("Last-Event-ID of each connection: %q, want \"\", 8, 9", resumedFrom)
	}
	if len(delays) != 2 || delays[0] != time.Second || delays[1] != time.Second {
		t.Errorf("backoff %v, want 1s after each stream that was up", delays)
	}
}

// TestTUIPrintsJobLines: the terminal UI prints the chat's job lines
// above itself, as it prints tool lines.
func TestTUIPrintsJobLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: 1\ndata: {\"type\":\"job_started\",\"chatKey\":\"api:chat:cli\",\"jobId\":\"J2\",\"label\":\"mcp.ci.build_all `{}`\",\"state\":\"running\"}\n\n")
		fmt.Fprint(w, "id: 2\ndata: {\"type\":\"job_finished\",\"chatKey\":\"api:chat:cli\",\"jobId\":\"J2\",\"state\":\"cancelled\",\"cancelledBy\":\"al\",\"exitCode\":-1,\"durationMs\":2000}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	client, err := shipclient.New(shipclient.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := &chatModel{s: chatSession{client: client, chatKey: "api:chat:cli"}, out: newPrinter(), st: newTUIStyles()}
	stop := m.showJobs(context.Background())
	var printed []string
	for len(printed) < 2 {
		select {
		case <-m.out.wake:
			printed = append(printed, m.out.take()...)
		case <-time.After(15 * time.Second):
			t.Fatalf("printed %q, want two job lines", printed)
		}
	}
	stop()
	want := "⚙ job J2 started: mcp.ci.build_all `{}`\n⚙ job J2 cancelled by al after 2s"
	if got := strings.Join(printed, "\n"); !strings.Contains(got, "⚙ job J2 started: mcp.ci.build_all `{}`") || !strings.Contains(got, "⚙ job J2 cancelled by al after 2s") {
		t.Errorf("printed %q, want the lines of %q", got, want)
	}
}
