package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/turn"
)

// get fetches a console URL as a browser on this machine would (no token
// is set: the console answers loopback).
func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestConsoleServesSentFilesAsImagesOrDownloadsOnly(t *testing.T) {
	s := startShip(t)
	html := "<html><script>alert(document.cookie)</script></html>"
	s.sendFiles(t, "", map[string][]byte{"chart.png": chartPNG(t), "report.csv": []byte(html)},
		map[string]string{"chart.png": "image/png", "report.csv": "text/csv"})
	_, page := get(t, s.url+"/console/entries?chat="+consoleKey)
	var image, csv string
	for _, part := range strings.Split(page, `"`) {
		part = strings.ReplaceAll(part, "&amp;", "&")
		switch {
		case strings.HasPrefix(part, "/console/files?") && strings.Contains(part, "chart.png"):
			image = part
		case strings.HasPrefix(part, "/console/files?") && strings.Contains(part, "report.csv"):
			csv = part
		}
	}
	if image == "" || csv == "" {
		t.Fatalf("the chat log does not link both files:\n%s", page)
	}

	resp, body := get(t, s.url+image)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(body, "\x89PNG") {
		t.Errorf("the image is served as %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// Any other file is a download that no browser renders, even one
	// whose bytes are a page with script.
	resp, body = get(t, s.url+csv)
	if resp.StatusCode != 200 || body != html {
		t.Errorf("the CSV is served as %d %q", resp.StatusCode, body)
	}
	for name, want := range map[string]string{
		"Content-Type":            "application/octet-stream",
		"Content-Disposition":     `attachment; filename=report.csv`,
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("the download's %s is %q, want %q", name, got, want)
		}
	}
	// Nothing outside .ship/files, however the path is spelled.
	s.appendEntry(t, chat.RoleUser, "hello", nil) // the chat log itself is a file ship keeps
	for _, p := range []string{".ship/chats/api_chat_console.jsonl", ".ship/files/../chats/api_chat_console.jsonl",
		"/etc/passwd", ".ship/files/../../Agent.md", "../.ship/questions.json"} {
		if resp, _ := get(t, s.url+"/console/files?path="+p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("path %q: %d, want 404", p, resp.StatusCode)
		}
	}
}

func TestConsoleAnswerToAQuestionForSomeoneElseIsRefusedAndSaysWhy(t *testing.T) {
	s := startShip(t)
	const key = "telegram:chat:-10042"
	route := turn.Route{Channel: "telegram", ChatID: "-10042", ChatKey: key, ChatType: "supergroup", UserID: "7", Username: "alice"}
	q, err := s.asks.Ask(context.Background(), questions.Question{ChatKey: key, Route: route, Asked: "telegram:7",
		Text: "Which plan, Alice?", Choices: []string{"A", "B"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.Append(context.Background(), chat.ChatLogEntryV1{Channel: "telegram", ChatID: "-10042", ChatKey: key,
		Role: chat.RoleAssistant, Text: dispatch.NumberedChoices(q.Shown()),
		Meta: map[string]any{"via": dispatch.ViaAsk, "questionId": q.ID, "choices": q.Choices}}); err != nil {
		t.Fatal(err)
	}

	// The page offers the buttons (the question is open) ...
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	resp, err := client.Get(s.url + "/chats/" + key)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `hx-post="/console/questions/`+q.ID+`/2"`) {
		t.Fatalf("the chat page shows no button for the open question:\n%s", page)
	}
	m := regexp.MustCompile(`X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the page")
	}

	// ... but a press in the console is not Alice's answer.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/questions/"+q.ID+"/2", strings.NewReader(url.Values{"chat": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-CSRF-Token", string(m[1]))
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.TrimSpace(string(body)) != "This question is for someone else." {
		t.Errorf("the console's answer got %d %q", resp.StatusCode, body)
	}
	if got, _ := s.asks.Get(context.Background(), q.ID); got.Answer != 0 {
		t.Errorf("the question was answered with %d", got.Answer)
	}
}

func TestConsoleChatListPreviewsAReplyAsWordsNotMarkers(t *testing.T) {
	s := startShip(t)
	s.appendEntry(t, chat.RoleAssistant, "**Done.** Run `go test` — see [the docs](https://go.dev/doc/).", nil)
	_, page := get(t, s.url+"/chats")
	if !strings.Contains(page, "ship: Done. Run go test — see the docs (https://go.dev/doc/).") || strings.Contains(page, "**Done.**") {
		t.Errorf("the chat list previews the reply as:\n%s", page)
	}
}
