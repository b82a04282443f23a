package main_test

import (
	"context"
	"encoding/base64"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// jpegBytes is enough of a JPEG for content sniffing.
var jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00 an e2e photo")

// TestE2ETelegramPhotoAndVoice runs the real binary against the Telegram
// fake: a photo reaches a vision model as an image part, and a voice note
// becomes the turn's instruction through the transcription endpoint,
// configured as the README says (environment only).
func TestE2ETelegramPhotoAndVoice(t *testing.T) {
	const token, sttKey = "4243:e2e-media-token", "sk-e2e-stt-key-never-shown"
	tg := startTelegram(t, token)
	fake := startFake(t, nil)
	fake.SetTranscriber(func(tr fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Text: "please summarise the photo"}
	})
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake, append(telegramEnv(tg, token),
		"LLM_VISION=true", "STT_BASE_URL="+fake.BaseURL(), "STT_API_KEY="+sttKey)...))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled: %v", err)
	}
	tg.Push(tg.WithPhoto(tg.PrivateText(81, "ann", "what is this?"), "e2e-photo", 640, 480, jpegBytes))
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("waiting for the photo's reply: %v", err)
	}
	req := fake.Requests()[0]
	want := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpegBytes)
	if imgs := req.LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
		t.Fatalf("the model got image parts %+v, want the photo", imgs)
	}

	tg.Push(tg.WithVoice(tg.PrivateText(81, "ann", ""), "e2e-voice", 3, []byte("OggS e2e voice")))
	sent, err := tg.WaitSent(ctx, 2)
	if err != nil {
		t.Fatalf("waiting for the voice note's reply: %v", err)
	}
	if got := sent[1].Text; got != "echo: please summarise the photo" {
		t.Errorf("voice reply %q", got)
	}
	reqs := fake.Requests()
	if got := reqs[len(reqs)-1].LastUser(); got != "please summarise the photo" {
		t.Errorf("the voice turn's instruction is %q", got)
	}
	if trs := fake.Transcriptions(); len(trs) != 1 || trs[0].FileName != "e2e-voice.ogg" {
		t.Errorf("transcription requests %+v", trs)
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, sttKey) || strings.Contains(out, token) {
			t.Error("a secret appears in ship's output")
		}
	}
}

// TestE2ENonVisionModelGetsTheDescription: with llm.vision left at auto, a
// model whose name is not a vision model's gets the photo described.
func TestE2ENonVisionModelGetsTheDescription(t *testing.T) {
	const token = "4244:e2e-media-token"
	tg := startTelegram(t, token)
	fake := startFake(t, nil)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake, telegramEnv(tg, token)...))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("ship never long-polled: %v", err)
	}
	tg.Push(tg.WithPhoto(tg.PrivateText(82, "bob", "and this?"), "e2e-photo-2", 800, 600, jpegBytes))
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatalf("waiting for the reply: %v", err)
	}
	req := fake.Requests()[0]
	if n := len(req.LastUserImages()); n != 0 {
		t.Errorf("a non-vision model got %d image parts", n)
	}
	if text := req.LastUser(); !strings.HasPrefix(text, "[photo (800x600), ") || !strings.Contains(text, "saved at .ship/files/") {
		t.Errorf("the model saw %q", text)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
