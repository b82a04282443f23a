package qq_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/media"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR a qq image")

func (e *env) firstUser(key string) chat.ChatLogEntryV1 {
	e.t.Helper()
	for _, en := range e.entries(key) {
		if en.Role == chat.RoleUser {
			return en
		}
	}
	e.t.Fatal("no user entry")
	return chat.ChatLogEntryV1{}
}

func TestImageAttachmentReachesAVisionModel(t *testing.T) {
	e := newEnv(t, setup{vision: true})
	e.qq.Push(fakeqq.WithAttachments(e.qq.GroupAt("G1", "M1", "what's this?"), e.qq.Image("shot.png", "image/png", 320, 200, pngBytes)))
	e.waitSent(1)
	req := e.model.Requests()[0]
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	if imgs := req.LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("image parts %+v", imgs)
	}
	if text := req.LastUser(); !strings.HasPrefix(text, "[image (320x200), ") || !strings.HasSuffix(text, "]\nwhat's this?") {
		t.Errorf("text %q", text)
	}
	f := adaptertest.Files(t, e.firstUser("qq:group:G1"))
	if len(f) != 1 || f[0].Kind != media.KindImage || f[0].Name != "shot.png" {
		t.Fatalf("meta.files %+v", f)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, f[0].Path)); err != nil || string(b) != string(pngBytes) {
		t.Errorf("stored %q, %v", b, err)
	}
}

func TestImageAttachmentOverTheCapIsRefused(t *testing.T) {
	e := newEnv(t, setup{vision: true, maxFile: 16})
	e.qq.Push(fakeqq.WithAttachments(e.qq.C2C("U1", "see"), e.qq.Image("big.png", "image/png", 1, 1, pngBytes)))
	e.waitSent(1)
	req := e.model.Requests()[0]
	if text := req.LastUser(); text != fmt.Sprintf("[image (1x1), %d bytes: not downloaded, over the 16 bytes limit]\nsee", len(pngBytes)) || len(req.LastUserImages()) != 0 {
		t.Fatalf("model saw %q with %d images", text, len(req.LastUserImages()))
	}
	if got := e.qq.MediaGets(); len(got) != 0 {
		t.Errorf("a file QQ said was too large was fetched: %v", got)
	}
}

func TestVoiceIsTranscribedFromItsWavVersion(t *testing.T) {
	e := newEnv(t, setup{stt: true})
	e.model.SetTranscriber(func(tr fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Text: "remind me at five"}
	})
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt a qq voice")
	e.qq.Push(fakeqq.WithAttachments(e.qq.C2C("U2", ""), e.qq.Voice("v1", []byte("#!SILK_V3 silk bytes"), wav)))
	if got := e.waitSent(1)[0].Content; got != "echo: remind me at five" {
		t.Fatalf("reply %q", got)
	}
	trs := e.model.Transcriptions()
	if len(trs) != 1 || trs[0].FileName != "v1.wav" || string(trs[0].Audio) != string(wav) {
		t.Fatalf("transcriptions %+v", trs)
	}
	u := e.firstUser("qq:c2c:U2")
	if u.Text != "remind me at five" || u.Meta["transcript"] != true {
		t.Errorf("log %q %v", u.Text, u.Meta)
	}
	if gets := e.qq.MediaGets(); len(gets) != 1 || gets[0] != "v1.wav" {
		t.Errorf("downloads %v: want only the .wav", gets)
	}
}

func TestVoiceWithoutTranscriptionIsDescribed(t *testing.T) {
	e := newEnv(t, setup{})
	e.qq.Push(fakeqq.WithAttachments(e.qq.C2C("U3", ""), e.qq.Voice("v2", []byte("silk"), []byte("RIFF wav"))))
	e.waitSent(1)
	if text := e.model.Requests()[0].LastUser(); !strings.HasPrefix(text, "[voice message, 8 bytes, saved at .ship/files/") ||
		!strings.HasSuffix(text, "; not transcribed: speech to text is not set up]") {
		t.Fatalf("model saw %q", text)
	}
}
