package config

import (
	"fmt"
	"strings"

	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/stt"
)

// FilesConfig bounds the files people send (photos, voice notes,
// documents), kept under .ship/files.
type FilesConfig struct {
	// MaxBytes caps one file (default 20 MiB); a larger one is described
	// to the model as refused, not downloaded.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// Shared is not read from ship.json: cluster mode sets it once the
	// replica has joined (cmd/ship), before any store is built, so that
	// every store built from this config (the platforms' and the
	// agent's) puts received files where the other replicas find them.
	Shared media.Shared `json:"-"`
}

// applyMediaEnv reads LLM_VISION and the STT_* variables.
func applyMediaEnv(cfg *Config, lookup LookupEnv) {
	str := func(key string, dst *string) {
		if v, ok := lookup(key); ok && v != "" {
			*dst = v
		}
	}
	if v, ok := lookup("LLM_VISION"); ok && v != "" {
		cfg.LLM.Vision = llm.Vision(strings.ToLower(strings.TrimSpace(v)))
	}
	str("STT_BASE_URL", &cfg.STT.BaseURL)
	str("STT_MODEL", &cfg.STT.Model)
	str("STT_API_KEY", &cfg.STT.APIKey)
	str("STT_LANGUAGE", &cfg.STT.Language)
}

func (c *Config) validateMedia() error {
	if !c.LLM.Vision.Valid() {
		return fmt.Errorf("%w: llm.vision (LLM_VISION) %q must be auto, true or false", ErrInvalid, c.LLM.Vision)
	}
	if err := c.STT.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Files.MaxBytes < 0 || c.Files.MaxBytes > 2<<30 {
		return fmt.Errorf("%w: files.maxBytes %d must be between 0 (the default, %s) and 2 GiB",
			ErrInvalid, c.Files.MaxBytes, media.Size(media.DefaultMaxFileBytes))
	}
	return nil
}

// FileStore is where platform adapters keep the files people send, and
// where the agent reads them from.
func (c Config) FileStore() *media.Store {
	if c.Files.Shared == nil {
		return media.NewStore(c.Dir, c.Files.MaxBytes)
	}
	return media.NewStore(c.Dir, c.Files.MaxBytes, media.WithShared(c.Files.Shared))
}

// Transcriber is the speech-to-text client, or nil when stt is not
// configured.
func (c Config) Transcriber() (*stt.Client, error) {
	cl, err := stt.New(c.STT)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return cl, nil
}
