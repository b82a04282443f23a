package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
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
