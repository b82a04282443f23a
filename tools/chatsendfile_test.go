package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/tools"
)

// filePlatform stands in for a platform that takes files: Telegram's
// limits (10 MB photos, 50 MB documents, albums of 10), and a record of
// what reached the chat.
type filePlatform struct {
	mu    sync.Mutex
	got   [][]byte
	names []string
	kinds []string
	capts []string
}

func (p *filePlatform) SendText(context.Context, dispatch.RequestContext, string) error { return nil }

func (p *filePlatform) FileLimits(dispatch.RequestContext) dispatch.FileLimits {
	return dispatch.FileLimits{MaxBytes: map[string]int64{media.KindImage: 10 << 20, media.KindFile: 50 << 20}, MaxFiles: 10, MaxCaption: 1024}
}

func (p *filePlatform) SendFiles(_ context.Context, _ dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, len(files))
	for i, f := range files {
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return nil, err
		}
		p.got, p.names, p.kinds = append(p.got, b), append(p.names, f.Name), append(p.kinds, f.Kind)
		ids[i] = "file-" + f.Name
	}
	p.capts = append(p.capts, caption)
	return ids, nil
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type fileRig struct {
	dir   string
	store *chat.Store
	plat  *filePlatform
	tool  *tools.ChatSendFile
	ctx   context.Context
}

func newFileRig(t *testing.T) *fileRig {
	t.Helper()
	dir := t.TempDir()
	store := openStore(t)
	plat := &filePlatform{}
	reg := dispatch.NewRegistry()
	reg.Register("telegram", plat)
	ctx := dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "telegram", ChatID: "-100", ChatKey: "telegram:chat:-100", MessageID: "9"})
	return &fileRig{dir: dir, store: store, plat: plat, ctx: ctx, tool: &tools.ChatSendFile{
		Deliverer: &dispatch.Deliverer{Registry: reg, Store: store}, Dir: dir,
		Keep: media.NewStore(dir, tools.MaxKeptFileBytes), Private: []string{"ship.json", ".env", ".ship"},
	}}
}

func (r *fileRig) write(t *testing.T, rel string, b []byte) {
	t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *fileRig) call(args string) (map[string]any, bool) {
	res := r.tool.Call(r.ctx, json.RawMessage(args))
	var out map[string]any
	_ = json.Unmarshal([]byte(res.Content), &out)
	return out, res.OK
}

// A PNG of the project reaches the chat as an image with its caption; the
// chat log names it with the platform's file id, and the copy kept under
// .ship/files is what was sent.
func TestChatSendFileSendsAProjectFile(t *testing.T) {
	r := newFileRig(t)
	img := pngBytes(t)
	r.write(t, "out/chart.png", img)
	r.write(t, "out/log.txt", []byte("line 1\n"))
	out, ok := r.call(`{"paths":["out/chart.png","./out/log.txt"],"caption":"**Weekly** chart"}`)
	if !ok {
		t.Fatalf("send failed: %v", out)
	}
	if len(r.plat.got) != 2 || !bytes.Equal(r.plat.got[0], img) || r.plat.kinds[0] != media.KindImage || r.plat.kinds[1] != media.KindFile ||
		r.plat.capts[0] != "**Weekly** chart" {
		t.Fatalf("platform got %v %v %q", r.plat.names, r.plat.kinds, r.plat.capts)
	}
	es, err := r.store.Recent(context.Background(), "telegram:chat:-100", 5)
	if err != nil || len(es) != 1 || es[0].Meta["via"] != dispatch.ViaFiles || !strings.Contains(es[0].Text, "chart.png (image/png") {
		t.Fatalf("chat log: %+v %v", es, err)
	}
	raw, _ := json.Marshal(es[0].Meta["artifacts"])
	var arts []dispatch.Artifact
	if err := json.Unmarshal(raw, &arts); err != nil || len(arts) != 2 || arts[0].FileID != "file-chart.png" ||
		!strings.HasPrefix(arts[0].Path, ".ship/files/") || !strings.HasPrefix(arts[0].URL, "/api/files/") || arts[1].MIME != "text/plain" {
		t.Fatalf("artifacts %+v (%v)", arts, err)
	}
	kept, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(arts[0].Path)))
	if err != nil || !bytes.Equal(kept, img) {
		t.Fatalf("kept copy differs: %v", err)
	}
}

// Whatever a chat member talks the model into, only files of the project
// go out: not ship's configuration, secrets or state, not another chat's
// files, nothing outside the folder or through a symlink out of it, and
// nothing over the platform's limit. Each refusal says why and sends
// nothing, not even the files of the same call that were fine.
func TestChatSendFileRefusesWhatMustNotLeave(t *testing.T) {
	r := newFileRig(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.write(t, "ok.png", pngBytes(t))
	r.write(t, "ship.json", []byte(`{"adapters":{"telegram":{"botToken":"123:secret"}}}`))
	r.write(t, ".env", []byte("TELEGRAM_BOT_TOKEN=123:secret"))
	r.write(t, ".ship/approvals.json", []byte("{}"))
	r.write(t, ".ship/files/telegram_chat_555/1-photo.jpg", []byte("other chat's photo"))
	r.write(t, "empty.txt", nil)
	r.write(t, "out/x.txt", []byte("x"))
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(r.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(r.dir, ".env"), filepath.Join(r.dir, "env.txt")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 10<<20+1)
	copy(big, pngBytes(t))
	r.write(t, "big.png", big)

	for _, c := range []struct{ path, why string }{
		{filepath.Join(outside, "passwd"), "outside the project"},
		{"../" + filepath.Base(outside) + "/passwd", "outside the project"},
		{"link", "through a symlink"},
		{"env.txt", "cannot be sent"},
		{"ship.json", "cannot be sent"},
		{".env", "cannot be sent"},
		{".ship/approvals.json", "ship's own state"},
		{".ship/files/telegram_chat_555/1-photo.jpg", "ship's own state"},
		{"missing.png", "no such file"},
		{"empty.txt", "is empty"},
		{"big.png", "over telegram's limit of 10.0 MB for image files"},
		{".ship/files", "ship's own state"},
		{"out", "not a regular file"},
	} {
		args, _ := json.Marshal(map[string]any{"paths": []string{"ok.png", c.path}})
		out, ok := r.call(string(args))
		if ok || !strings.Contains(out["error"].(string), c.why) || !strings.Contains(out["error"].(string), "nothing was sent") {
			t.Errorf("%s: %v, want a refusal saying %q", c.path, out, c.why)
		}
		if strings.Contains(out["error"].(string), r.dir) || strings.Contains(out["error"].(string), "123:secret") {
			t.Errorf("%s: the refusal tells too much: %v", c.path, out["error"])
		}
	}
	if len(r.plat.got) != 0 {
		t.Fatalf("%d files reached the chat", len(r.plat.got))
	}
	// This chat's own received files may be sent back.
	r.write(t, ".ship/files/telegram_chat_-100/3-photo.png", pngBytes(t))
	if out, ok := r.call(`{"paths":[".ship/files/telegram_chat_-100/3-photo.png"]}`); !ok {
		t.Fatalf("this chat's own file: %v", out)
	}
}

// The policy judges each path as one command of its own, so a rule like
// chat_send_file(reports/*) allows a file under reports/ and no other.
func TestChatSendFileCommandLineNamesEachPath(t *testing.T) {
	r := newFileRig(t)
	line, err := r.tool.CommandLine(json.RawMessage(`{"paths":["reports/a.pdf","./x y.png"]}`))
	if err != nil || line != `reports/a.pdf ; 'x y.png'` {
		t.Fatalf("command line %q (%v)", line, err)
	}
}

// A voice note goes as a document where the platform takes no voice notes
// or audio, rather than being refused.
func TestChatSendFileFallsBackToADocument(t *testing.T) {
	r := newFileRig(t)
	r.write(t, "note.opus", append([]byte("OggS\x00\x02"), make([]byte, 64)...))
	if out, ok := r.call(`{"paths":["note.opus"]}`); !ok || len(r.plat.kinds) != 1 || r.plat.kinds[0] != media.KindFile {
		t.Fatalf("voice note: %v, kinds %v", out, r.plat.kinds)
	}
}
