package feishu_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/media"
)

// pngBytes is enough of a PNG for content sniffing.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR a tiny image")

func stem(t *testing.T, chatKey string) string {
	s, err := chat.EscapeChatKey(chatKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func firstUser(t *testing.T, es []chat.ChatLogEntryV1) chat.ChatLogEntryV1 {
	t.Helper()
	for _, e := range es {
		if e.Role == chat.RoleUser {
			return e
		}
	}
	t.Fatal("no user entry")
	return chat.ChatLogEntryV1{}
}

func TestImageIsDownloadedAndShownToAVisionModel(t *testing.T) {
	e := newEnv(t, setup{vision: true})
	ev := e.lk.Image("oc_img", "p2p", "ou_ann", "img_v3_k1")
	e.lk.AddResource(ev.MessageID, "img_v3_k1", "image", "img_v3_k1.png", "image/png", pngBytes)
	e.push(ev)
	e.waitSent(1)

	gets := e.lk.ResourceGets()
	if len(gets) != 1 || gets[0].Type != "image" || gets[0].MessageID != ev.MessageID {
		t.Fatalf("resource API calls %+v", gets)
	}
	req := e.model.Requests()[0]
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	if imgs := req.LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("image parts %+v", imgs)
	}
	u := firstUser(t, e.entries("feishu:chat:oc_img"))
	f := adaptertest.Files(t, u)
	if len(f) != 1 || f[0].Kind != media.KindImage || f[0].MIME != "image/png" || !strings.HasPrefix(f[0].Path, ".ship/files/"+stem(t, "feishu:chat:oc_img")+"/") {
		t.Fatalf("meta.files %+v", f)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, f[0].Path)); err != nil || string(b) != string(pngBytes) {
		t.Errorf("stored file %q, %v", b, err)
	}
	if !strings.Contains(u.Text, "saved at "+f[0].Path) {
		t.Errorf("log text %q does not name the file", u.Text)
	}
}

func TestImageToANonVisionModelIsDescribed(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.lk.Image("oc_img2", "p2p", "ou_ann", "img_v3_k2")
	e.lk.AddResource(ev.MessageID, "img_v3_k2", "image", "", "image/png", pngBytes)
	e.push(ev)
	e.waitSent(1)
	req := e.model.Requests()[0]
	if len(req.LastUserImages()) != 0 || !strings.HasPrefix(req.LastUser(), "[image, 29 bytes, saved at .ship/files/") {
		t.Fatalf("model saw %q with %d images", req.LastUser(), len(req.LastUserImages()))
	}
}

func TestFileOverTheCapIsRefused(t *testing.T) {
	e := newEnv(t, setup{maxFile: 8})
	ev := e.lk.File("oc_f", "p2p", "ou_ann", "file_v3_big", "report.pdf")
	e.lk.AddResource(ev.MessageID, "file_v3_big", "file", "report.pdf", "application/pdf", []byte("%PDF-1.7 more than eight bytes"))
	e.push(ev)
	e.waitSent(1)
	if got := e.model.Requests()[0].LastUser(); got != `[file "report.pdf": not downloaded, over the 8 bytes limit]` {
		t.Fatalf("model saw %q", got)
	}
	if u := firstUser(t, e.entries("feishu:chat:oc_f")); u.Meta["files"] != nil {
		t.Errorf("a refused file is referenced: %v", u.Meta)
	}
}

func TestAudioIsTranscribedWithoutConversion(t *testing.T) {
	e := newEnv(t, setup{stt: true})
	e.model.SetTranscriber(func(tr fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Text: "明天开会吗"}
	})
	opus := []byte("OggS\x00\x02\x00\x00 OpusHead feishu voice")
	ev := e.lk.Audio("oc_a", "p2p", "ou_ann", "file_v3_voice", 2300)
	e.lk.AddResource(ev.MessageID, "file_v3_voice", "file", "file_v3_voice.opus", "application/octet-stream", opus)
	e.push(ev)
	if got := e.waitSent(1)[0].Text; got != "echo: 明天开会吗" {
		t.Fatalf("reply %q", got)
	}
	// Feishu's .opus is Ogg/Opus: sent as .ogg, the bytes untouched.
	trs := e.model.Transcriptions()
	if len(trs) != 1 || trs[0].FileName != "file_v3_voice.ogg" || string(trs[0].Audio) != string(opus) {
		t.Fatalf("transcriptions %+v", trs)
	}
	u := firstUser(t, e.entries("feishu:chat:oc_a"))
	if u.Text != "明天开会吗" || u.Meta["transcript"] != true {
		t.Errorf("log entry %q %v", u.Text, u.Meta)
	}
}

func TestAudioTranscriptionFailureIsSaidInTheChat(t *testing.T) {
	e := newEnv(t, setup{stt: true})
	e.model.SetTranscriber(func(fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Status: 500, ErrorMessage: "model crashed"}
	})
	ev := e.lk.Audio("oc_b", "p2p", "ou_ann", "file_v3_v2", 1000)
	e.lk.AddResource(ev.MessageID, "file_v3_v2", "file", "v.opus", "", []byte("OggS voice"))
	e.push(ev)
	if got := e.waitSent(1)[0].Text; !strings.Contains(got, "could not transcribe your voice message") {
		t.Fatalf("chat got %q", got)
	}
	e.idle()
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("model called %d times", n)
	}
}
