package agent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/tools"
)

var pngImage = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR runtime test image")

// visionRig is a runtime with a store of files in a project folder.
type visionRig struct {
	t     *testing.T
	dir   string
	files *media.Store
	store *chat.Store
	rt    *agent.Runtime
	n     int
}

func newVisionRig(t *testing.T, model llms.Model, vision bool, opts ...media.Option) *visionRig {
	t.Helper()
	dir := t.TempDir()
	store, err := chat.OpenStore(chat.StoreOptions{Dir: t.TempDir(), Durability: chat.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	reg := dispatch.NewRegistry()
	reg.Register(channel, dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { return nil }))
	files := media.NewStore(dir, 0, opts...)
	rt, err := agent.New(agent.Options{Model: model, Tools: tools.Default(store, &dispatch.Deliverer{Registry: reg, Store: store}),
		Store: store, Vision: vision, Files: files, RetryBackoff: time.Millisecond,
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	return &visionRig{t: t, dir: dir, files: files, store: store, rt: rt}
}

// send logs and runs one message carrying files.
func (r *visionRig) send(text string, files ...media.File) {
	r.t.Helper()
	r.n++
	req := dispatch.RequestContext{Channel: channel, ChatID: "7", ChatKey: "telegram:chat:7", ChatType: "private", MessageID: string(rune('a' + r.n))}
	ctx := dispatch.WithRequest(context.Background(), req)
	if _, err := r.store.Append(ctx, chat.ChatLogEntryV1{Channel: channel, ChatID: "7", ChatKey: req.ChatKey, Role: chat.RoleUser,
		Text: text, MessageID: req.MessageID}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.rt.Run(ctx, agent.AgentRunInput{ChatKey: req.ChatKey, Route: req, Instructions: text, Files: files}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *visionRig) save(kind, name string, b []byte) media.File {
	r.t.Helper()
	f, err := r.files.Save(context.Background(), "telegram:chat:7", "m1", kind, name, "", bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	return f
}

func openAIModel(t *testing.T) (*fakeopenai.Server, llms.Model) {
	t.Helper()
	fake, err := fakeopenai.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	m, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("k"), openai.WithModel("gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	return fake, m
}

func TestImagePartForAVisionModelOnlyInItsOwnTurn(t *testing.T) {
	fake, model := openAIModel(t)
	r := newVisionRig(t, model, true)
	img := r.save(media.KindImage, "p.png", pngImage)
	doc := r.save(media.KindFile, "notes.txt", []byte("not an image"))
	r.send("[image, saved at "+img.Path+"]\nwhat is it?", img, doc)

	first := fake.Requests()[0]
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngImage)
	if imgs := first.LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("image parts %+v, want exactly the image as a data URL", imgs)
	}
	// Every model call of the run sees the image (the tool loop's second
	// call too), and nothing but the current user message carries it.
	for _, req := range fake.Requests() {
		if len(req.LastUserImages()) != 1 {
			t.Errorf("a call of the run lost the image")
		}
	}

	r.send("and now?")
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	for _, m := range last.Messages {
		if len(m.Images) > 0 {
			t.Fatalf("the next turn replays image bytes (%s message)", m.Role)
		}
	}
	if !strings.Contains(last.Messages[1].Content, img.Path) {
		t.Errorf("history lost the reference: %q", last.Messages[1].Content)
	}
}

func TestNoImagePartForANonVisionModel(t *testing.T) {
	fake, model := openAIModel(t)
	r := newVisionRig(t, model, false)
	img := r.save(media.KindImage, "p.png", pngImage)
	r.send("[image, saved at "+img.Path+"]", img)
	if imgs := fake.Requests()[0].LastUserImages(); len(imgs) != 0 {
		t.Fatalf("a non-vision model got %d image parts", len(imgs))
	}
}

func TestAnImageThatIsGoneIsOnlyDescribed(t *testing.T) {
	fake, model := openAIModel(t)
	r := newVisionRig(t, model, true)
	gone := media.File{Kind: media.KindImage, Path: ".ship/files/x/never-saved.png", MIME: "image/png"}
	outside := media.File{Kind: media.KindImage, Path: "../../etc/passwd"}
	r.send("[image]", gone, outside)
	if n := len(fake.Requests()[0].LastUserImages()); n != 0 {
		t.Fatalf("%d image parts for files that cannot be read", n)
	}
}

func TestImageReachesAnthropicAsABase64Block(t *testing.T) {
	fake, err := fakeanthropic.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	model, err := llm.New(llm.Config{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5", BaseURL: fake.BaseURL(), APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	r := newVisionRig(t, model, true)
	img := r.save(media.KindImage, "p.png", pngImage)
	r.send("what is it?", img)

	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(fake.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var blocks []struct {
		Type   string `json:"type"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	last := body.Messages[len(body.Messages)-1]
	if err := json.Unmarshal(last.Content, &blocks); err != nil {
		t.Fatalf("user content %s: %v", last.Content, err)
	}
	var found bool
	for _, b := range blocks {
		if b.Type == "image" {
			found = b.Source.Type == "base64" && b.Source.MediaType == "image/png" && b.Source.Data == base64.StdEncoding.EncodeToString(pngImage)
		}
	}
	if !found {
		t.Fatalf("no base64 image block in %s", last.Content)
	}
}

// memShared is a media.Shared in memory: the other replicas of a cluster.
type memShared struct{ objs map[string][]byte }

func (m *memShared) Put(_ context.Context, name string, r io.ReadSeeker) error {
	b, err := io.ReadAll(r)
	m.objs[name] = b
	return err
}

func (m *memShared) Get(_ context.Context, name string, w io.Writer, _ int64) error {
	b, ok := m.objs[name]
	if !ok {
		return fs.ErrNotExist
	}
	_, err := w.Write(b)
	return err
}

func TestFilesReceivedByAnotherReplicaAreFetchedForTheRun(t *testing.T) {
	fake, model := openAIModel(t)
	shared := &memShared{objs: map[string][]byte{}}
	receiver := media.NewStore(t.TempDir(), 0, media.WithShared(shared))
	img, err := receiver.Save(context.Background(), "telegram:chat:7", "m1", media.KindImage, "p.png", "", bytes.NewReader(pngImage))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := receiver.Save(context.Background(), "telegram:chat:7", "m1", media.KindFile, "notes.txt", "", strings.NewReader("some notes"))
	if err != nil {
		t.Fatal(err)
	}
	r := newVisionRig(t, model, true, media.WithShared(shared))
	r.send("[image, saved at "+img.Path+"]\n[file, saved at "+doc.Path+"]", img, doc)

	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngImage)
	if imgs := fake.Requests()[0].LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("image parts %+v, want the image received elsewhere", imgs)
	}
	// The paths the model was told lead to the files on this replica.
	if b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(doc.Path))); err != nil || string(b) != "some notes" {
		t.Errorf("the document on the run's replica: %q, %v", b, err)
	}
}
