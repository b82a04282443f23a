package console_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/browser"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/turn"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/tools"
)

// EnvShots, when set to a folder, makes the browser test save screenshots
// of the chat page there (desktop and phone sizes) for a person to look
// at. They are never committed.
const EnvShots = "SHIP_CONSOLE_SHOTS"

// consoleKey is the console's own chat, where the tests put what they
// show.
const consoleKey = "api:chat:console"

// shipUnderTest is ship as production wires it for the console: the
// engine over a real chat store and question store, the HTTP server with
// the console on, the files under .ship/files, and langchaingo's OpenAI
// client against the loopback fake model.
type shipUnderTest struct {
	url    string
	dir    string
	store  *chat.Store
	asks   *questions.Store
	files  *media.Store
	engine *engine.Engine
}

// echoModel is a catalog of one model, the fake's EchoChatSend.
func echoModel(t *testing.T) *models.Catalog {
	t.Helper()
	fake, err := fakeopenai.Start(fakeopenai.EchoChatSend)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	cat, err := models.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", BaseURL: fake.BaseURL(), APIKey: "sk-console-test"})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func startShip(t *testing.T) *shipUnderTest {
	t.Helper()
	cat := echoModel(t)
	dir := t.TempDir()
	logs := &logbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	store, err := chat.OpenStore(chat.StoreOptions{Dir: filepath.Join(dir, ".ship", "chats"), Durability: chat.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	table, err := records.OpenFile(filepath.Join(dir, ".ship", "questions.json"))
	if err != nil {
		t.Fatal(err)
	}
	asks := questions.New(table, nil)
	eng, err := engine.New(engine.Options{
		Tools: tools.Default, Store: store, Questions: asks, Durability: chat.DurabilityNone,
		Models: cat, AgentMDPath: filepath.Join(dir, "Agent.md"), Logger: zerolog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = eng.Close(context.Background()) })
	files := media.NewStore(dir, 0)
	s, err := server.New(server.Options{Door: eng, View: eng, Console: true, Files: files, Version: "test", Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.CloseStreams)
	return &shipUnderTest{url: srv.URL, dir: dir, store: store, asks: asks, files: files, engine: eng}
}

// appendEntry adds an entry to the console chat's log, as the chat tools
// do when a reply was delivered.
func (s *shipUnderTest) appendEntry(t *testing.T, role, text string, meta map[string]any) {
	t.Helper()
	_, err := s.store.Append(context.Background(), chat.ChatLogEntryV1{
		Channel: chat.ChannelAPI, ChatID: "console", ChatKey: consoleKey, UserID: "console", Role: role, Text: text, Meta: meta,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sendFiles keeps files under .ship/files and logs them as chat_send_file
// does, with caption.
func (s *shipUnderTest) sendFiles(t *testing.T, caption string, files map[string][]byte, mimes map[string]string) {
	t.Helper()
	var arts []dispatch.Artifact
	for _, name := range []string{"chart.png", "report.csv"} {
		b, ok := files[name]
		if !ok {
			continue
		}
		kind := media.KindFile
		if strings.HasPrefix(mimes[name], "image/") {
			kind = media.KindImage
		}
		f, err := s.files.Save(context.Background(), consoleKey, "out-1", kind, name, mimes[name], bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		arts = append(arts, dispatch.Artifact{Name: name, Kind: kind, MIME: mimes[name], Bytes: int64(len(b)), Path: f.Path, URL: dispatch.FileURL(f.Path)})
	}
	s.appendEntry(t, chat.RoleAssistant, dispatch.FilesText(caption, arts), map[string]any{"via": dispatch.ViaFiles, "artifacts": arts})
}

// ask keeps a question asked of the console's user and logs it as the
// ask tool does.
func (s *shipUnderTest) ask(t *testing.T, text string, choices ...string) questions.Question {
	t.Helper()
	q, err := s.asks.Ask(context.Background(), questions.Question{
		ChatKey: consoleKey, Asked: chat.APIAnonymous, Text: text, Choices: choices,
		Route: turn.Route{Channel: chat.ChannelAPI, ChatID: "console", ChatKey: consoleKey, ChatType: chat.ChatTypeAPI, UserID: "console", Username: "console"},
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.appendEntry(t, chat.RoleAssistant, dispatch.NumberedChoices(q.Shown()),
		map[string]any{"via": dispatch.ViaAsk, "questionId": q.ID, "choices": q.Choices})
	return q
}

// chartPNG is a small bar chart, a picture a run might have drawn.
func chartPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 240, 140))
	for x := range 240 {
		for y := range 140 {
			img.Set(x, y, color.RGBA{250, 250, 250, 255})
		}
	}
	for i, h := range []int{40, 90, 65, 120, 80} {
		for x := 20 + i*44; x < 50+i*44; x++ {
			for y := 140 - h; y < 140; y++ {
				img.Set(x, y, color.RGBA{11, 98, 196, 255})
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// formattedReply is Markdown as models write it, with what a hostile
// prompt could make a model write: script that must show as text.
const formattedReply = "**Done.** The build passed; here is what changed:\n\n" +
	"1. `runtime/questions`: a new store\n2. the console renders *Markdown*\n   - nested lists work\n\n" +
	"```go\nfunc main() {\n\tfmt.Println(\"a long line of code that does not fit on a phone screen at all, so it scrolls\")\n}\n```\n\n" +
	"| Platform | Formatting | Files | Buttons |\n|:--|:--|--:|:-:|\n| Telegram | entities | 50 MB | inline keyboard |\n" +
	"| Feishu | card markdown | 30 MB | card buttons |\n| QQ | plain text | 10 MB | numbered list |\n\n" +
	"> Quotes stay quotes. See [Go's docs](https://go.dev/doc/) and ![a remote pixel](https://tracker.example/p.gif).\n\n" +
	"Test: <script>alert(1)</script><script>window.shipPwned = 1</script> and <img src=x onerror=alert(1)> " +
	"<img src=x onerror=\"window.shipPwned = 2\">."

func TestConsoleChatPageShowsFormattedRepliesImagesAndQuestions(t *testing.T) {
	ctx := browser.ForTest(t)
	s := startShip(t)

	// A JavaScript dialog would mean the reply's script ran: count any,
	// and dismiss it so the test goes on to say so.
	var dialogs atomic.Int32
	dismiss := make(chan struct{}, 8)
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			select {
			case dismiss <- struct{}{}:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-dismiss:
				_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
					return err
				}))
			}
		}
	}()

	s.appendEntry(t, chat.RoleUser, "How did the **build** go? <b>bold?</b>", map[string]any{"username": "console"})
	s.appendEntry(t, chat.RoleAssistant, formattedReply, nil)
	s.sendFiles(t, "The chart of **build times**, and the raw numbers:",
		map[string][]byte{"chart.png": chartPNG(t), "report.csv": []byte("day,seconds\nmon,41\ntue,38\n")},
		map[string]string{"chart.png": "image/png", "report.csv": "text/csv"})
	q := s.ask(t, "Shall I **deploy** now?", "Yes, now", "Tomorrow", "No")

	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/chats/"+consoleKey)); err != nil {
		t.Fatalf("opening the chat page: %v", err)
	}
	pollIn(t, ctx, "the chat log", `document.querySelectorAll("#log .entry").length === 4`)

	// The reply is formatted.
	reply := `document.querySelectorAll("#log .entry.assistant")[0]`
	for what, expr := range map[string]string{
		"bold as <strong>":             reply + `.querySelector(".md strong").textContent === "Done."`,
		"a code block as <pre><code>":  reply + `.querySelector(".md pre > code.language-go").textContent.includes("fmt.Println")`,
		"a table as <table>":           reply + `.querySelectorAll(".md table tbody tr").length === 3`,
		"a list as <ol>":               reply + `.querySelector(".md ol > li code").textContent === "runtime/questions"`,
		"a link that opens a new tab":  reply + `.querySelector('.md a[href="https://go.dev/doc/"]').rel === "noopener noreferrer nofollow"`,
		"a remote image as a link":     reply + `.querySelector('.md a.md-image[href="https://tracker.example/p.gif"]') !== null`,
		"no remote image loaded":       `document.querySelectorAll('#log img[src^="http"]:not([src^="` + s.url + `"])').length === 0`,
		"the user's text as they sent": `document.querySelector("#log .entry.user .text").textContent === "How did the **build** go? <b>bold?</b>"`,
	} {
		if !evalIn[bool](t, ctx, expr) {
			t.Errorf("the chat page does not show %s", what)
		}
	}

	// The script in the reply shows as text and runs nothing.
	text := evalIn[string](t, ctx, reply+`.querySelector(".md").textContent`)
	for _, want := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the reply does not show %q as text; it reads:\n%s", want, text)
		}
	}
	if n := evalIn[int](t, ctx, `document.querySelectorAll("#log script, #log img[src='x'], #log [onerror]").length`); n != 0 {
		t.Errorf("the chat log holds %d script or img elements from the reply", n)
	}
	if evalIn[bool](t, ctx, `window.shipPwned !== undefined`) || dialogs.Load() != 0 {
		t.Errorf("the reply's script ran (shipPwned set or %d dialogs)", dialogs.Load())
	}

	// The sent image shows inline, loaded through the console; the other
	// file is a download link with its size.
	files := `document.querySelectorAll("#log .entry.assistant")[1]`
	pollIn(t, ctx, "the chart thumbnail", files+`.querySelector(".images img") && `+files+`.querySelector(".images img").complete`)
	if w := evalIn[int](t, ctx, files+`.querySelector(".images img").naturalWidth`); w != 240 {
		t.Errorf("the chart thumbnail is %d px wide, want the 240 px PNG", w)
	}
	if got := evalIn[string](t, ctx, files+`.querySelector(".md strong").textContent`); got != "build times" {
		t.Errorf("the files' caption is not formatted (strong: %q)", got)
	}
	if got := evalIn[string](t, ctx, files+`.querySelector(".downloads li").textContent`); !strings.Contains(got, "report.csv") || !strings.Contains(got, "bytes") {
		t.Errorf("the CSV is listed as %q, want its name and size", got)
	}
	if strings.Contains(evalIn[string](t, ctx, files+`.textContent`), "[sent ") {
		t.Error("the page repeats the log's [sent …] line beside the files")
	}

	// The question has a button per choice while it is open.
	buttons := `document.querySelectorAll("#log .choices button")`
	if n := evalIn[int](t, ctx, buttons+`.length`); n != 3 {
		t.Fatalf("the question shows %d buttons, want 3", n)
	}
	if got := evalIn[string](t, ctx, `document.querySelectorAll("#log .entry.assistant")[2].querySelector(".md strong").textContent`); got != "deploy" {
		t.Errorf("the question's text is not formatted (strong: %q)", got)
	}

	atSizes(t, ctx, os.Getenv(EnvShots))

	// A press answers it once: the console says so, and the question then
	// shows its choices as text with the one taken.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#log .choices button:nth-child(2)`))); err != nil {
		t.Fatalf("pressing the second choice: %v", err)
	}
	pollIn(t, ctx, "the answer's reply", `document.getElementById("flash").textContent === "Answered: Tomorrow"`)
	pollIn(t, ctx, "the answered question", `document.querySelector("#log ol.choices.closed li.chosen") !== null`)
	if got := evalIn[string](t, ctx, `document.querySelector("#log ol.choices.closed li.chosen").textContent`); !strings.HasPrefix(got, "Tomorrow") {
		t.Errorf("the chosen choice reads %q", got)
	}
	if n := evalIn[int](t, ctx, buttons+`.length`); n != 0 {
		t.Errorf("the answered question still shows %d buttons", n)
	}
	got, err := s.asks.Get(context.Background(), q.ID)
	if err != nil || got.Answer != 2 {
		t.Errorf("the question's answer is %d (%v), want 2", got.Answer, err)
	}

	// A second press (a stale page) answers nothing and says why.
	status := evalIn[string](t, ctx, `(async () => {
		const csrf = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRF-Token"];
		const r = await fetch("/console/questions/`+q.ID+`/1", {method: "POST", headers: {"X-CSRF-Token": csrf,
			"Content-Type": "application/x-www-form-urlencoded"}, body: "chat=`+consoleKey+`"});
		return r.status + " " + (await r.text()).trim();
	})()`, chromedp.EvalAwaitPromise)
	if status != "409 Already answered by the console: Tomorrow." {
		t.Errorf("a second answer got %q", status)
	}
	if got, _ := s.asks.Get(context.Background(), q.ID); got.Answer != 2 {
		t.Errorf("a second answer changed the question to choice %d", got.Answer)
	}
}

// atSizes shows the chat page at desktop and phone sizes, light and dark,
// and checks that nothing sticks out sideways: code and tables scroll
// inside their box instead of widening the page. With dir set it saves a
// screenshot of each (the top and the bottom, as a person scrolls: a
// full-page capture draws the sticky message box in the wrong place).
func atSizes(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []struct {
		name          string
		width, height int
		mobile, dark  bool
	}{
		{"desktop", 1280, 800, false, false},
		{"phone", 390, 844, true, false},
		{"phone-dark", 390, 844, true, true},
	} {
		if err := chromedp.Do(ctx, browser.Viewport(size.width, size.height, size.mobile), browser.ColorScheme(size.dark)); err != nil {
			t.Fatalf("showing the page at %s size: %v", size.name, err)
		}
		if w := evalIn[int](t, ctx, `document.documentElement.scrollWidth`); w > size.width {
			t.Errorf("%s: the page is %d px wide in a %d px window", size.name, w, size.width)
		}
		if dir == "" {
			continue
		}
		for _, at := range []struct{ name, scroll string }{{"top", "0"}, {"bottom", "document.body.scrollHeight"}} {
			evalIn[bool](t, ctx, `(window.scrollTo(0, `+at.scroll+`), true)`)
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "chat-"+size.name+"-"+at.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := chromedp.Do(ctx, browser.Viewport(1280, 800, false), browser.ColorScheme(false)); err != nil {
		t.Fatal(err)
	}
}

// evalIn evaluates a JavaScript expression in the page.
func evalIn[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// pollIn waits until a JavaScript expression is true in the page; the
// browser's own deadline is the hang guard.
func pollIn(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if err := chromedp.Do(ctx, browser.Until(expr)); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
