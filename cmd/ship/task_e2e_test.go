package main_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// With an API token set, the follow-up command `ship task run` prints must
// work when pasted: it carries the Authorization header, naming the
// environment variable, never the token itself. A start also warns, in its
// log and in GET /api/tasks, of a task whose schedule never fires.
func TestE2ETaskRunFollowUpCarriesTheToken(t *testing.T) {
	const token = "s3cret-task-token"
	fake := startFake(t, nil)
	dir := initProject(t)
	writeTask(t, dir, "report", "---\ncron: \"0 9 * * 7\"\ntimezone: UTC\nchatKey: api:chat:reports\n---\nWrite the report.\n", time.Now())
	writeTask(t, dir, "feb31", "---\ncron: \"0 0 31 2 *\"\nchatKey: api:chat:reports\n---\nNever.\n", time.Now())
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+token))
	cli := append(baseEnv(), "SHIP_PORT="+strings.TrimPrefix(p.url, "http://127.0.0.1:"), "SHIP_API_TOKEN="+token)

	out, errOut, code := runShip(t, cli, "task", "run", "report", dir)
	if code != 0 || strings.Contains(out+errOut, token) {
		t.Fatalf("ship task run: exit %d (the token must not be printed)\n%s%s", code, out, errOut)
	}
	_, follow, ok := strings.Cut(out, "Follow it: ")
	follow = strings.TrimSpace(follow)
	const header = `-H "Authorization: Bearer $SHIP_API_TOKEN" `
	if !ok || !strings.HasPrefix(follow, "curl -N "+header) {
		t.Fatalf("follow-up %q lacks %s", follow, header)
	}
	// Run it as the shell would: $SHIP_API_TOKEN expanded from the
	// environment the operator has.
	url := strings.TrimPrefix(follow, "curl -N "+header)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", os.Expand("Bearer $SHIP_API_TOKEN", func(string) string { return token }))
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("the printed command gets %d %s, want the event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	eventually(t, "the never-firing task in the log", func() bool {
		return strings.Contains(p.stdout.String()+p.stderr.String(), "never fires")
	})
	r := p.do(t, "GET", "/api/tasks", "", "Authorization: Bearer "+token)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"warning":"the schedule never fires`) {
		t.Errorf("GET /api/tasks = %d %s; want feb31's warning", r.status, r.body)
	}
}
