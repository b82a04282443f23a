package config

import (
	"strings"
	"testing"
)

// TestQQMarkdownOption: adapters.qq.markdown is off by default, set by
// ship.json or QQ_MARKDOWN (the environment wins), and a value that is not
// a boolean is a clear error naming it.
func TestQQMarkdownOption(t *testing.T) {
	cfg, err := Load(t.TempDir(), envOf(nil))
	if err != nil || cfg.Adapters.QQ.Markdown {
		t.Fatalf("default markdown = %v, %v; want false", cfg.Adapters.QQ.Markdown, err)
	}
	dir := t.TempDir()
	write(t, dir, FileName, `{"adapters": {"qq": {"markdown": true}}}`)
	if cfg, err = Load(dir, envOf(nil)); err != nil || !cfg.Adapters.QQ.Markdown {
		t.Fatalf("ship.json markdown = %v, %v; want true", cfg.Adapters.QQ.Markdown, err)
	}
	if cfg, err = Load(dir, envOf(map[string]string{"QQ_MARKDOWN": "false"})); err != nil || cfg.Adapters.QQ.Markdown {
		t.Fatalf("QQ_MARKDOWN=false over ship.json: %v, %v", cfg.Adapters.QQ.Markdown, err)
	}
	if _, err = Load(t.TempDir(), envOf(map[string]string{"QQ_MARKDOWN": "sometimes"})); err == nil || !strings.Contains(err.Error(), "QQ_MARKDOWN") {
		t.Fatalf("QQ_MARKDOWN=sometimes: err = %v, want one naming it", err)
	}
	bad := t.TempDir()
	write(t, bad, FileName, `{"adapters": {"qq": {"markdown": "yes"}}}`)
	if _, err = Load(bad, envOf(nil)); err == nil || !strings.Contains(err.Error(), "markdown") {
		t.Fatalf(`"markdown": "yes": err = %v, want one naming the field`, err)
	}
}
