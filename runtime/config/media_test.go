package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestMediaSettings(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{
	  "llm": {"provider": "openai", "model": "deepseek-chat", "apiKey": "k", "vision": true},
	  "stt": {"baseUrl": "http://127.0.0.1:9/v1", "model": "whisper-large-v3", "apiKey": "${STT_KEY}"},
	  "files": {"maxBytes": 1048576}
	}`)
	cfg, err := Load(dir, envOf(map[string]string{"STT_KEY": "sk-stt-from-env", "STT_MODEL": "env-model"}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.LLM.VisionCapable() || cfg.STT.Model != "env-model" || cfg.STT.APIKey != "sk-stt-from-env" || cfg.Files.MaxBytes != 1<<20 {
		t.Fatalf("media settings = %+v %+v %+v", cfg.LLM, cfg.STT, cfg.Files)
	}
	if tr, err := cfg.Transcriber(); tr == nil || err != nil {
		t.Errorf("Transcriber = %v, %v", tr, err)
	}
	if !slices.Contains(cfg.Secrets(), "sk-stt-from-env") {
		t.Error("the stt key is not among the secrets")
	}
	if cfg.FileStore().MaxBytes() != 1<<20 {
		t.Error("files.maxBytes not applied")
	}
}

func TestMediaOffByDefaultAndVisionFromTheEnvironment(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(map[string]string{"LLM_API_KEY": "k", "LLM_MODEL": "my-model", "LLM_VISION": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := cfg.Transcriber(); tr != nil || err != nil {
		t.Errorf("stt without settings: %v, %v; want off", tr, err)
	}
	if !cfg.LLM.VisionCapable() {
		t.Error("LLM_VISION=true ignored")
	}
}

func TestBadMediaSettingsNameTheSetting(t *testing.T) {
	for body, want := range map[string]string{
		`{"llm": {"vision": "maybe"}}`:           "llm.vision",
		`{"stt": {"baseUrl": "api.openai.com"}}`: "stt.baseUrl",
		`{"files": {"maxBytes": -1}}`:            "files.maxBytes",
	} {
		dir := t.TempDir()
		write(t, dir, FileName, body)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one naming %s", body, err, want)
		}
	}
}
