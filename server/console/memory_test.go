package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/server/console"
	"github.com/shipmyagent/ship/tools"
)

// storeNotes hands the console a real memory.Store, as cmd/ship does.
type storeNotes struct{ s *memory.Store }

func (n storeNotes) List(ctx context.Context) ([]console.Notes, error) {
	list, err := n.s.List(ctx)
	out := make([]console.Notes, len(list))
	for i, x := range list {
		out[i] = console.Notes{Kind: string(x.Kind), ID: x.ID, Text: x.Text}
	}
	return out, err
}

func (n storeNotes) Read(ctx context.Context, kind, id string) (string, error) {
	return n.s.Read(ctx, memory.Ref{Kind: memory.Kind(kind), ID: id})
}

func (n storeNotes) Write(ctx context.Context, kind, id, text string) error {
	return n.s.Write(ctx, memory.Ref{Kind: memory.Kind(kind), ID: id}, text)
}

func (n storeNotes) MaxBytes() int { return n.s.MaxBytes() }

func startShipWithNotes(t *testing.T) (string, *memory.Store) {
	t.Helper()
	cat := echoModel(t)
	dir := t.TempDir()
	notes, err := memory.Open(memory.Options{Dir: filepath.Join(dir, ".ship", "memory"), MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Options{Tools: tools.Default, ChatsDir: filepath.Join(dir, ".ship", "chats"),
		Durability: chat.DurabilityNone, Models: cat, Memory: notes, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })
	s, err := server.New(server.Options{Door: eng, View: eng, Console: true, Notes: storeNotes{notes}, Version: "test", Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.CloseStreams)
	return srv.URL, notes
}

func TestConsoleShowsAndSavesNotesUnderCSRF(t *testing.T) {
	base, notes := startShipWithNotes(t)
	ctx := context.Background()
	const key = "telegram:chat:-100"
	chatNotes := memory.Ref{Kind: memory.KindChat, ID: key}
	if err := notes.Write(ctx, chatNotes, "# Team\n- standup at <9:30>"); err != nil {
		t.Fatal(err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	fetch := func(req *http.Request) (int, string) {
		t.Helper()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	page := func(path string) string {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		status, body := fetch(req)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		return body
	}

	list := page("/notes")
	if !strings.Contains(list, `href="/notes"`) || !strings.Contains(list, key) || !strings.Contains(list, "# Team") {
		t.Fatalf("the Notes page does not list the chat's notes:\n%s", list)
	}
	edit := page("/notes/edit?kind=chat&id=" + url.QueryEscape(key))
	if !strings.Contains(edit, "- standup at &lt;9:30&gt;\n</textarea>") {
		t.Fatalf("the edit page does not show the notes, escaped:\n%s", edit)
	}
	m := regexp.MustCompile(`X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;`).FindStringSubmatch(edit)
	if m == nil {
		t.Fatal("no CSRF token in the page")
	}
	save := func(csrf, kind, text string) (int, string) {
		form := url.Values{"kind": {kind}, "id": {key}, "text": {text}}
		req, _ := http.NewRequest(http.MethodPost, base+"/console/notes", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
		}
		return fetch(req)
	}
	unchanged := func(why string) {
		t.Helper()
		if got, _ := notes.Read(ctx, chatNotes); got != "# Team\n- standup at <9:30>\n" {
			t.Fatalf("%s changed the notes: %q", why, got)
		}
	}

	if status, _ := save("", "chat", "forged"); status != http.StatusForbidden {
		t.Fatalf("a save without the CSRF token: %d", status)
	}
	unchanged("a save without the CSRF token")
	if status, body := save(m[1], "chat", strings.Repeat("x", 201)); status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit is 200") {
		t.Fatalf("a save past the bound: %d %q", status, body)
	}
	unchanged("a save past the bound")
	if status, _ := save(m[1], "group", "x"); status != http.StatusBadRequest {
		t.Fatalf("a save of an unknown kind: %d", status)
	}
	unchanged("a save of an unknown kind")

	if status, body := save(m[1], "chat", "# Team\r\n- standup at 10:00\r\n"); status != http.StatusOK || !strings.Contains(body, "Saved") {
		t.Fatalf("a save: %d %q", status, body)
	}
	if got, _ := notes.Read(ctx, chatNotes); got != "# Team\n- standup at 10:00\n" {
		t.Fatalf("saved notes: %q (want plain lines ending in LF)", got)
	}
}
