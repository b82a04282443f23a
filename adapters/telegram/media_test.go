package telegram_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/media"
)

// jpeg is enough of a JPEG for content sniffing.
var jpeg = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00 a tiny photo")

func userEntries(es []chat.ChatLogEntryV1) []chat.ChatLogEntryV1 {
	var out []chat.ChatLogEntryV1
	for _, e := range es {
		if e.Role == chat.RoleUser {
			out = append(out, e)
		}
	}
	return out
}

func TestPhotoReachesAVisionModelAsAnImagePart(t *testing.T) {
	e := newEnv(t, setup{vision: true})
	e.tg.Push(e.tg.WithPhoto(e.tg.PrivateText(90, "ann", "what is in this picture?"), "ph1", 640, 480, jpeg))
	e.waitSent(1)

	req := e.model.Requests()[0]
	imgs := req.LastUserImages()
	want := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)
	if len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("image parts %+v, want one with the photo as a data URL", imgs)
	}
	if text := req.LastUser(); !strings.HasSuffix(text, "what is in this picture?") || !strings.Contains(text, "saved at .ship/files/") {
		t.Errorf("the text part is %q", text)
	}

	// The log references the stored file; the file holds the photo.
	u := userEntries(e.entries("telegram:chat:90"))
	files := adaptertest.Files(t, u[0])
	if len(files) != 1 || files[0].Kind != media.KindImage || files[0].MIME != "image/jpeg" || files[0].Bytes != int64(len(jpeg)) ||
		!strings.HasPrefix(files[0].Path, ".ship/files/telegram_chat_90/") {
		t.Fatalf("meta.files = %+v", files)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, files[0].Path)); err != nil || string(b) != string(jpeg) {
		t.Fatalf("stored file: %q, %v", b, err)
	}
	if strings.Contains(u[0].Text, "base64") {
		t.Error("the log entry holds the image bytes")
	}

	// The next turn replays the photo's message by reference: no image
	// part anywhere, the path still in its text.
	e.tg.Push(e.tg.PrivateText(90, "ann", "and the colours?"))
	e.waitSent(2)
	next := e.model.Requests()[len(e.model.Requests())-1]
	if next.LastUser() != "and the colours?" {
		t.Fatalf("second request ends with %q", next.LastUser())
	}
	sawRef := false
	for _, m := range next.Messages {
		if len(m.Images) > 0 {
			t.Errorf("history replay sent image bytes again in a %s message", m.Role)
		}
		sawRef = sawRef || (m.Role == "user" && strings.Contains(m.Content, files[0].Path))
	}
	if !sawRef {
		t.Error("history lost the reference to the photo")
	}
}

func TestPhotoToANonVisionModelIsDescribed(t *testing.T) {
	e := newEnv(t, setup{vision: false})
	e.tg.Push(e.tg.WithPhoto(e.tg.PrivateText(91, "ann", "look"), "ph2", 800, 600, jpeg))
	e.waitSent(1)
	req := e.model.Requests()[0]
	if imgs := req.LastUserImages(); len(imgs) != 0 {
		t.Fatalf("a non-vision model got %d image parts", len(imgs))
	}
	if text := req.LastUser(); !strings.HasPrefix(text, "[photo (800x600), ") || !strings.HasSuffix(text, "]\nlook") {
		t.Fatalf("model saw %q", text)
	}
}

func TestFileOverTheCapIsRefusedAndSaidSo(t *testing.T) {
	e := newEnv(t, setup{vision: true, maxFile: 10})
	// Telegram says the size up front: not even fetched.
	e.tg.Push(e.tg.WithPhoto(e.tg.PrivateText(92, "ann", "big one"), "ph3", 640, 480, jpeg))
	e.waitSent(1)
	// A size Telegram does not state is caught while reading.
	u := e.tg.WithVoice(e.tg.PrivateText(92, "ann", ""), "vo3", 2, []byte("OggS much too long voice"))
	delete(u["message"].(map[string]any)["voice"].(map[string]any), "file_size")
	e.tg.Push(u)
	e.waitSent(2)

	reqs := e.model.Requests()
	if text := reqs[0].LastUser(); text != fmt.Sprintf("[photo (640x480), %d bytes: not downloaded, over the 10 bytes limit]\nbig one", len(jpeg)) {
		t.Errorf("model saw %q", text)
	}
	if len(reqs[0].LastUserImages()) != 0 {
		t.Error("a refused photo reached the model")
	}
	if text := reqs[len(reqs)-1].LastUser(); text != "[voice message (2 s): not downloaded, over the 10 bytes limit]" {
		t.Errorf("model saw %q", text)
	}
	for _, en := range userEntries(e.entries("telegram:chat:92")) {
		if _, ok := en.Meta["files"]; ok {
			t.Errorf("a refused file is referenced: %+v", en.Meta)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(e.dir, ".ship", "files", "*", "*")); len(left) != 0 {
		t.Errorf("refused files left behind: %v", left)
	}
}

func TestVoiceNoteBecomesTheInstruction(t *testing.T) {
	e := newEnv(t, setup{stt: true})
	e.model.SetTranscriber(func(tr fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Text: " what's on my calendar today? "}
	})
	voice := []byte("OggS\x00\x02 opus voice bytes")
	e.tg.Push(e.tg.WithVoice(e.tg.PrivateText(93, "ann", ""), "vo1", 3, voice))
	if got := e.waitSent(1)[0].Text; got != "echo: what's on my calendar today?" {
		t.Fatalf("reply %q", got)
	}
	if got := e.model.Requests()[0].LastUser(); got != "what's on my calendar today?" {
		t.Fatalf("the turn's instruction is %q", got)
	}
	trs := e.model.Transcriptions()
	if len(trs) != 1 || trs[0].Model != "whisper-1" || trs[0].FileName != "vo1.ogg" || string(trs[0].Audio) != string(voice) {
		t.Fatalf("transcription requests %+v", trs)
	}
	u := userEntries(e.entries("telegram:chat:93"))[0]
	if u.Text != "what's on my calendar today?" || u.Meta["transcript"] != true {
		t.Errorf("log entry %q meta %v: want the transcript, marked", u.Text, u.Meta)
	}
	if f := adaptertest.Files(t, u); len(f) != 1 || f[0].Kind != media.KindVoice {
		t.Errorf("meta.files = %+v", f)
	}
}

func TestVoiceThatCannotBeTranscribedIsSaidSo(t *testing.T) {
	e := newEnv(t, setup{stt: true})
	e.model.SetTranscriber(func(fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Status: 503, ErrorMessage: "overloaded"}
	})
	e.tg.Push(e.tg.WithVoice(e.tg.PrivateText(94, "ann", ""), "vo2", 3, []byte("OggS voice")))
	got := e.waitSent(1)[0].Text
	if !strings.Contains(got, "could not transcribe your voice message") || !strings.Contains(got, "503") {
		t.Fatalf("chat got %q", got)
	}
	e.idle()
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("the model was asked about an empty message (%d calls)", n)
	}
	var replied bool
	for _, en := range e.entries("telegram:chat:94") {
		replied = replied || (en.Role == chat.RoleAssistant && en.Text == got)
	}
	if !replied {
		t.Error("the note is not in the chat log")
	}
}
