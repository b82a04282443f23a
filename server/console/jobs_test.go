package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/turn"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/tools"
)

// consoleClient is a browser with cookies: it keeps the console session.
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (b consoleClient) do(method, path, csrf string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, nil)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestConsoleJobsPageCancelsUnderCSRFAndRole(t *testing.T) {
	cat := echoModel(t)
	pol, err := policy.Parse(json.RawMessage(`{"roles": {"ops": {"members": [], "approve": true}, "viewers": {"members": []}}}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := jobs.Open(jobs.Options{Path: filepath.Join(dir, ".ship", "jobs.json")})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Tools: tools.Default, ChatsDir: filepath.Join(dir, ".ship", "chats"),
		Durability: chat.DurabilityNone, Models: cat, Policy: func() *policy.Policy { return pol }, Jobs: m, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })
	browser := func(role string) consoleClient {
		s, err := server.New(server.Options{Door: eng, View: eng, Console: true, ConsoleRole: role, Version: "test", Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		jar, _ := cookiejar.New(nil)
		return consoleClient{t: t, base: srv.URL, c: &http.Client{Jar: jar}}
	}

	const key = "telegram:chat:-100"
	ended := make(chan struct{})
	j, err := m.Start(jobs.Spec{ChatKey: key, Route: turn.Route{ChatKey: key, Channel: "telegram", ChatID: "-100"}, Tool: "exec_shell",
		Label: "exec_shell `make <all>`"}, 0, func(ctx context.Context) jobs.Result {
		<-ctx.Done()
		close(ended)
		return jobs.Result{ExitCode: -1}
	})
	if err != nil {
		t.Fatal(err)
	}

	// A viewer role sees the job but gets no button, and a cancel is
	// refused.
	viewer := browser("viewers")
	status, page := viewer.do(http.MethodGet, "/jobs", "")
	if status != http.StatusOK || !strings.Contains(page, j.ID) || !strings.Contains(page, "make &lt;all&gt;") || strings.Contains(page, "/cancel") ||
		!strings.Contains(page, "lease "+j.Lease.ID) {
		t.Fatalf("viewer's Jobs page (%d):\n%s", status, page)
	}
	csrf := regexp.MustCompile(`X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token in the page")
	}
	if status, _ := viewer.do(http.MethodPost, "/console/jobs/"+j.ID+"/cancel", csrf[1]); status != http.StatusForbidden {
		t.Fatalf("a viewer's cancel: %d, want 403", status)
	}

	ops := browser("ops")
	_, page = ops.do(http.MethodGet, "/jobs", "")
	if !strings.Contains(page, `hx-post="/console/jobs/`+j.ID+`/cancel"`) {
		t.Fatalf("ops' Jobs page has no cancel button:\n%s", page)
	}
	csrf = regexp.MustCompile(`X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;`).FindStringSubmatch(page)
	if status, _ := ops.do(http.MethodPost, "/console/jobs/"+j.ID+"/cancel", ""); status != http.StatusForbidden {
		t.Fatalf("a cancel without the CSRF token: %d, want 403", status)
	}
	if got := m.List(key); got[0].State != jobs.Running {
		t.Fatalf("refused cancels stopped the job: %s", got[0].State)
	}
	if status, body := ops.do(http.MethodPost, "/console/jobs/"+j.ID+"/cancel", csrf[1]); status != http.StatusNoContent {
		t.Fatalf("ops' cancel: %d %s", status, body)
	}
	<-ended
	if status, _ := ops.do(http.MethodPost, "/console/jobs/"+j.ID+"/cancel", csrf[1]); status != http.StatusConflict {
		t.Fatalf("a second cancel: %d, want 409", status)
	}
	if got := m.List(key); got[0].State != jobs.Cancelled || got[0].CancelledBy != "the console (ops)" {
		t.Fatalf("after the cancel: %+v", got[0])
	}
}
