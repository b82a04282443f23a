package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/shipclient"
	"github.com/shipmyagent/ship/runtime/chat"
)

// showModel is a model that shows things: "send P" sends the project file
// P with a caption (chat_send_file), "ask" asks a question with three
// choices (chat_ask); once a tool answered, it ends its turn; the turn an
// answer starts is answered "thanks".
func showModel(r fakeopenai.Request) fakeopenai.Response {
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	text := r.LastUser()
	switch {
	case strings.HasPrefix(text, "send "):
		args, _ := json.Marshal(map[string]any{"paths": []string{strings.TrimPrefix(text, "send ")}, "caption": "here it is"})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send_file", Arguments: string(args)}}}
	case text == "ask":
		args, _ := json.Marshal(map[string]any{"question": "Which **plan**?", "choices": []string{"Plan A", "Plan B", "Plan C"}})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_ask", Arguments: string(args)}}}
	}
	return fakeopenai.Response{Content: "thanks"}
}

const showToken = "show-token-0123456789abcdef0123456789abcdef"

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// pngBytes is a real PNG image.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeProjectFile(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// artifact is one entry of /api/execute's artifacts.
type artifact struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	MIME  string `json:"mime"`
	Bytes int64  `json:"bytes"`
	Path  string `json:"path"`
	URL   string `json:"url"`
}

// sendFile runs "send name" in chat id with token tok and returns the
// run's answer and its artifacts.
func (e *env) sendFile(tok, chatID, name string) (executeResult, []artifact) {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"instructions": "send " + name, "chatId": chatID})
	r := e.request(http.MethodPost, "/api/execute", b, bearer(tok))
	res := r.result(e.t)
	var arts struct {
		Artifacts []artifact `json:"artifacts"`
	}
	if err := json.Unmarshal(r.body, &arts); err != nil {
		e.t.Fatal(err)
	}
	return res, arts.Artifacts
}

func TestAnArtifactDownloadsWithTheAPIToken(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, token: showToken, show: true})
	img := pngBytes(t)
	writeProjectFile(t, e.dir, "chart.png", img)

	res, arts := e.sendFile(showToken, "files", "chart.png")
	if !res.Success || len(arts) != 1 {
		t.Fatalf("the run: %+v, artifacts %+v", res, arts)
	}
	a := arts[0]
	if a.Name != "chart.png" || a.Kind != "image" || a.MIME != "image/png" || a.Bytes != int64(len(img)) ||
		!strings.HasPrefix(a.URL, "/api/files/") || !strings.HasPrefix(a.Path, ".ship/files/") {
		t.Errorf("artifact = %+v", a)
	}
	if len(res.Replies) != 1 || res.Replies[0] != "here it is" {
		t.Errorf("replies = %q, want the caption", res.Replies)
	}

	got := e.request(http.MethodGet, a.URL, nil, bearer(showToken))
	if got.status != http.StatusOK || !bytes.Equal(got.body, img) {
		t.Fatalf("download: %d, %d bytes (want %d)", got.status, len(got.body), len(img))
	}
	h := got.header
	if h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("Content-Disposition") != "inline; filename*=UTF-8''chart.png" ||
		h.Get("Content-Security-Policy") != "sandbox; default-src 'none'" || h.Get("Cache-Control") != "private" {
		t.Errorf("download headers = %v", h)
	}
	if r := e.get(a.URL); r.status != http.StatusUnauthorized || r.errorCode(t) != "UNAUTHORIZED" || bytes.Contains(r.body, img[:8]) {
		t.Errorf("without the token: %d %s", r.status, r.body)
	}
	if r := e.request(http.MethodGet, a.URL, nil, bearer("wrong-token")); r.status != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d", r.status)
	}
	// A page on another site cannot make the browser fetch it either.
	if r := e.request(http.MethodGet, a.URL, nil, map[string]string{"Authorization": "Bearer " + showToken, "Sec-Fetch-Site": "cross-site"}); r.status != http.StatusForbidden {
		t.Errorf("a cross-site fetch: %d", r.status)
	}

	// The chat log names what was sent.
	var logged bool
	for _, en := range e.entries("api:chat:files") {
		if en.Role == chat.RoleAssistant && strings.Contains(en.Text, "chart.png (image/png") {
			logged = true
		}
	}
	if !logged {
		t.Error("the chat log does not name the sent file")
	}
}

func TestDownloadsNeverLeaveShipFiles(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, token: showToken, show: true})
	const secret = "SECRET-IN-SHIP-JSON"
	writeProjectFile(t, e.dir, "ship.json", []byte(`{"token":"`+secret+`"}`))
	writeProjectFile(t, e.dir, "notes.txt", []byte("notes"))
	_, arts := e.sendFile(showToken, "leak", "notes.txt")
	if len(arts) != 1 {
		t.Fatalf("artifacts = %+v", arts)
	}
	chatDir := filepath.Dir(filepath.Join(e.dir, filepath.FromSlash(arts[0].Path)))
	rel := strings.TrimPrefix(filepath.ToSlash(chatDir), filepath.ToSlash(filepath.Join(e.dir, ".ship", "files"))+"/")
	// A symlink inside .ship/files that leads out of it, and one to a
	// folder outside.
	if err := os.Symlink(filepath.Join(e.dir, "ship.json"), filepath.Join(chatDir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.dir, filepath.Join(chatDir, "up")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/api/files/../ship.json",
		"/api/files/../../ship.json",
		"/api/files/%2e%2e/%2e%2e/ship.json",
		"/api/files/%2E%2E%2F%2E%2E%2Fship.json",
		"/api/files/" + rel + "/../../../ship.json",
		"/api/files//etc/passwd",
		"/api/files/%2Fetc%2Fpasswd",
		"/api/files/" + absSegment(e.dir) + "/ship.json",
		"/api/files/" + rel + "/link.json",
		"/api/files/" + rel + "/up/ship.json",
		"/api/files/" + rel,
		"/api/files/" + rel + "/nothing.png",
		"/api/files/" + rel + "%5C..%5C..%5Cship.json",
		"/api/files/",
	} {
		r := e.request(http.MethodGet, p, nil, bearer(showToken))
		if r.status != http.StatusNotFound || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("GET %s: %d %s, want 404", p, r.status, r.body)
		}
		if bytes.Contains(r.body, []byte(secret)) || bytes.Contains(r.body, []byte(e.dir)) || r.header.Get("Location") != "" {
			t.Errorf("GET %s leaks: %v %s", p, r.header, r.body)
		}
	}
	if strings.Contains(e.logs.String(), `"status":30`) || strings.Contains(e.logs.String(), `"path":"/ship.json"`) {
		t.Error("a download was redirected out of /api/files")
	}
	// The file itself is there.
	if r := e.request(http.MethodGet, arts[0].URL, nil, bearer(showToken)); r.status != http.StatusOK || string(r.body) != "notes" {
		t.Errorf("the kept file: %d %q", r.status, r.body)
	}
}

// absSegment is an absolute path as it would appear after /api/files/.
func absSegment(abs string) string { return strings.TrimPrefix(filepath.ToSlash(abs), "/") }

func TestAnHTMLFileIsAnAttachmentThatRunsNothing(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, token: showToken, show: true})
	page := []byte("<!doctype html><html><script>fetch('/api/chats')</script></html>")
	writeProjectFile(t, e.dir, "report page.html", page)
	writeProjectFile(t, e.dir, "logo.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`))
	for name, disposition := range map[string]string{
		"report page.html": "attachment; filename*=UTF-8''report_page.html",
		"logo.svg":         "attachment; filename*=UTF-8''logo.svg",
	} {
		_, arts := e.sendFile(showToken, "html", name)
		if len(arts) != 1 {
			t.Fatalf("artifacts of %s = %+v", name, arts)
		}
		r := e.request(http.MethodGet, arts[0].URL, nil, bearer(showToken))
		h := r.header
		if r.status != http.StatusOK || h.Get("Content-Disposition") != disposition ||
			h.Get("Content-Security-Policy") != "sandbox; default-src 'none'" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", name, r.status, h)
		}
	}
}

// The api chat gets a question as numbered text; the API lists it and
// answers it once, as the token's identity.
func TestAQuestionIsAnsweredOnceOverTheAPI(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, token: showToken, show: true, opts: withCIToken})
	b, _ := json.Marshal(map[string]any{"instructions": "ask", "chatId": "q"})
	res := e.request(http.MethodPost, "/api/execute", b, bearer(showToken)).result(t)
	if len(res.Replies) != 1 || !strings.Contains(res.Replies[0], "Which **plan**?") || !strings.Contains(res.Replies[0], "2. Plan B") {
		t.Fatalf("replies = %q, want the question with numbered choices", res.Replies)
	}
	list := e.request(http.MethodGet, "/api/chats/api:chat:q/questions", nil, bearer(showToken))
	var open struct {
		Questions []struct {
			ID      string   `json:"questionId"`
			Text    string   `json:"question"`
			Choices []string `json:"choices"`
			Expires int64    `json:"expiresAt"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(list.body, &open); err != nil || list.status != http.StatusOK || len(open.Questions) != 1 {
		t.Fatalf("open questions: %d %s", list.status, list.body)
	}
	q := open.Questions[0]
	if q.Text != "Which **plan**?" || len(q.Choices) != 3 || q.Expires == 0 {
		t.Errorf("question = %+v", q)
	}
	answerPath := "/api/questions/" + q.ID + "/answer"
	post := func(body, tok string, h map[string]string) response {
		hh := bearer(tok)
		for k, v := range h {
			hh[k] = v
		}
		return e.request(http.MethodPost, answerPath, []byte(body), hh)
	}

	// Bad bodies change nothing.
	for _, body := range []string{``, `{}`, `{"choice":0}`, `{"choice":9}`, `{"choice":"2"}`, `{"choice":2,"extra":1}`, `[2]`, `{"choice":4}`} {
		if r := post(body, showToken, nil); r.status != http.StatusBadRequest || r.errorCode(t) != "INVALID_INPUT" {
			t.Errorf("answer %s: %d %s, want 400", body, r.status, r.body)
		}
	}
	if r := post(`{"choice":2}`, showToken, map[string]string{"Content-Type": "text/plain"}); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("a text/plain answer: %d", r.status)
	}
	if r := e.request(http.MethodPost, answerPath, []byte(`{"choice":2}`), nil); r.status != http.StatusUnauthorized {
		t.Errorf("an answer without a token: %d", r.status)
	}
	// Asked of api:token: another token's holder may not answer.
	if r := post(`{"choice":1}`, ciToken, nil); r.status != http.StatusConflict || r.errorCode(t) != "CONFLICT" || !contains(r.message(t), "for someone else") {
		t.Errorf("another identity's answer: %d %s", r.status, r.body)
	}

	r := post(`{"choice":2}`, showToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("the answer: %d %s", r.status, r.body)
	}
	if m := r.json(t); m["answered"] != true || m["reply"] != "Answered: Plan B" {
		t.Errorf("the answer's body = %v", m)
	}
	again := post(`{"choice":3}`, showToken, nil)
	if again.status != http.StatusConflict || !contains(again.message(t), "Already answered by api:token") {
		t.Errorf("a second answer: %d %s", again.status, again.body)
	}
	if r := e.request(http.MethodPost, "/api/questions/NOSUCHQ/answer", []byte(`{"choice":1}`), bearer(showToken)); r.status != http.StatusNotFound || r.errorCode(t) != "NOT_FOUND" {
		t.Errorf("an unknown question: %d %s", r.status, r.body)
	}
	if r := e.request(http.MethodGet, "/api/chats/api:chat:q/questions", nil, bearer(showToken)); !contains(string(r.body), `"questions":[]`) {
		t.Errorf("open questions after the answer: %s", r.body)
	}

	// The answer is a turn of its own in the question's chat, once.
	waitFor(t, "the answer's turn", func() bool {
		n := 0
		for _, en := range e.entries("api:chat:q") {
			if en.Role == chat.RoleUser && strings.Contains(en.Text, "answered your question") {
				n++
			}
		}
		return n == 1 && e.engine.QueueStats().Running == 0 && e.engine.QueueStats().Waiting == 0
	})
	var answers []string
	for _, en := range e.entries("api:chat:q") {
		if en.Role == chat.RoleUser && strings.Contains(en.Text, "answered your question") {
			answers = append(answers, en.Text)
		}
	}
	if len(answers) != 1 || !strings.Contains(answers[0], "2. Plan B") {
		t.Errorf("answer turns = %q", answers)
	}
}

// The streamed /api/execute carries the artifact and ui events.
func TestStreamedExecuteCarriesArtifactAndUIEvents(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, show: true})
	writeProjectFile(t, e.dir, "chart.png", pngBytes(t))
	var art, ui map[string]any
	for _, ev := range e.streamExecute("/api/execute", `{"instructions":"send chart.png","chatId":"s"}`) {
		if ev.typ() == "artifact" {
			art = ev.Data
		}
	}
	for _, ev := range e.streamExecute("/api/execute", `{"instructions":"ask","chatId":"s"}`) {
		if ev.typ() == "ui" {
			ui = ev.Data
		}
	}
	if art == nil || art["name"] != "chart.png" || art["mimeType"] != "image/png" || art["kind"] != "image" ||
		!strings.HasPrefix(art["url"].(string), "/api/files/") || art["size"].(float64) <= 0 || art["chatKey"] != "api:chat:s" {
		t.Errorf("artifact event = %v", art)
	}
	if ui == nil || ui["kind"] != "choice" || ui["question"] != "Which **plan**?" || len(ui["choices"].([]any)) != 3 || ui["questionId"] == "" {
		t.Errorf("ui event = %v", ui)
	}
	if r := e.get(art["url"].(string)); r.status != http.StatusOK {
		t.Errorf("the artifact's url: %d", r.status)
	}
}

// ship's own client gets the artifact with a URL it can download, with
// its token, and the question with its choices.
func TestShipClientGetsFilesAndQuestions(t *testing.T) {
	e := newEnv(t, setup{handler: showModel, token: showToken, show: true})
	img := pngBytes(t)
	writeProjectFile(t, e.dir, "chart.png", img)
	c, err := shipclient.New(shipclient.Options{BaseURL: e.srv.URL, Token: showToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var got []shipclient.Event
	keep := func(ev shipclient.Event) {
		if ev.Type == shipclient.TypeArtifact || ev.Type == shipclient.TypeUI {
			got = append(got, ev)
		}
	}
	if _, err := c.Execute(ctx, "cli", "send chart.png", keep); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ctx, "cli", "ask", keep); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("artifact and ui events = %+v", got)
	}
	a, q := got[0], got[1]
	if a.Name != "chart.png" || a.MIMEType != "image/png" || a.Size != int64(len(img)) || !strings.HasPrefix(a.DownloadURL, e.srv.URL+"/api/files/") {
		t.Errorf("artifact = %+v", a)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.DownloadURL, nil)
	req.Header.Set("Authorization", "Bearer "+showToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, img) {
		t.Errorf("downloading %s: %d, %d bytes", a.DownloadURL, resp.StatusCode, len(body))
	}
	if q.Question != "Which **plan**?" || len(q.Choices) != 3 || q.QuestionID == "" || q.Kind != "choice" {
		t.Errorf("ui = %+v", q)
	}
	// Typing the number answers it: the next turn is the answer's.
	if _, err := c.Execute(ctx, "cli", "3", nil); err != nil {
		t.Fatal(err)
	}
	var answered bool
	for _, en := range e.entries("api:chat:cli") {
		if en.Role == chat.RoleUser && strings.Contains(en.Text, "answered your question "+q.QuestionID) && strings.Contains(en.Text, "3. Plan C") {
			answered = true
		}
	}
	if !answered {
		t.Error("typing 3 did not answer the question")
	}
	if r := e.request(http.MethodGet, "/api/chats/api:chat:cli/questions", nil, bearer(showToken)); !contains(string(r.body), `"questions":[]`) {
		t.Errorf("open questions after the typed answer: %s", r.body)
	}
}
