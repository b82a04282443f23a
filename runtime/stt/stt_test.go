package stt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/stt"
)

const key = "sk-stt-secret-1234567890"

func client(t *testing.T, f *fakeopenai.Server, c stt.Config) *stt.Client {
	t.Helper()
	c.BaseURL = f.BaseURL()
	cl, err := stt.New(c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func fake(t *testing.T, apiKey string) *fakeopenai.Server {
	t.Helper()
	f, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{APIKey: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestTranscribeSendsTheFileAndReturnsTheText(t *testing.T) {
	f := fake(t, key)
	f.SetTranscriber(func(tr fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Text: "  hello there \n"}
	})
	cl := client(t, f, stt.Config{APIKey: key, Model: "whisper-large-v3", Language: "en"})
	got, err := cl.Transcribe(context.Background(), "note.ogg", []byte("OggS audio"))
	if err != nil || got != "hello there" {
		t.Fatalf("Transcribe = %q, %v", got, err)
	}
	trs := f.Transcriptions()
	if len(trs) != 1 || trs[0].Model != "whisper-large-v3" || trs[0].FileName != "note.ogg" ||
		string(trs[0].Audio) != "OggS audio" || trs[0].Language != "en" {
		t.Fatalf("the endpoint got %+v", trs)
	}
}

func TestFailuresNeverCarryTheKey(t *testing.T) {
	f := fake(t, key)
	cases := map[string]struct {
		cfg  stt.Config
		name string
		want string
	}{
		"wrong key":          {stt.Config{APIKey: key + "x"}, "a.ogg", "401"},
		"unsupported format": {stt.Config{APIKey: key}, "a.amr", "Invalid file format"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := client(t, f, c.cfg).Transcribe(context.Background(), c.name, []byte("x"))
			var se *stt.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want an *stt.Error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), key[3:20]) {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

func TestServerErrorIsReported(t *testing.T) {
	f := fake(t, "")
	f.SetTranscriber(func(fakeopenai.Transcription) fakeopenai.TranscriptionResponse {
		return fakeopenai.TranscriptionResponse{Status: 503, ErrorMessage: "overloaded, try later"}
	})
	_, err := client(t, f, stt.Config{}).Transcribe(context.Background(), "a.wav", []byte("RIFF"))
	var se *stt.Error
	if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(err.Error(), "overloaded, try later") {
		t.Fatalf("err = %v", err)
	}
}

func TestTooLargeIsRefusedBeforeSending(t *testing.T) {
	f := fake(t, "")
	_, err := client(t, f, stt.Config{}).Transcribe(context.Background(), "a.wav", make([]byte, stt.MaxBytes+1))
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.Transcriptions()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestCancelledContextStopsTheCall(t *testing.T) {
	f := fake(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client(t, f, stt.Config{}).Transcribe(ctx, "a.ogg", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestConfig(t *testing.T) {
	if (stt.Config{}).Enabled() {
		t.Error("an empty config is enabled")
	}
	if cl, err := stt.New(stt.Config{}); cl != nil || err != nil {
		t.Errorf("New(empty) = %v, %v; want nil, nil (off)", cl, err)
	}
	n := stt.Config{APIKey: "k"}.Normalized()
	if n.BaseURL != stt.DefaultBaseURL || n.Model != stt.DefaultModel {
		t.Errorf("defaults %+v", n)
	}
	if err := (stt.Config{BaseURL: "ftp://x/v1"}).Validate(); err == nil || !strings.Contains(err.Error(), "STT_BASE_URL") {
		t.Errorf("Validate(ftp) = %v", err)
	}
}
