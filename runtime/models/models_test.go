package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/llm"
)

func catalog(t *testing.T) *Catalog {
	t.Helper()
	cat, err := New(llm.Config{Provider: "offline", Models: map[string]llm.Config{
		"fast": {Provider: "deepseek", Model: "deepseek-chat", APIKey: "sk-deepseek-123"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestCatalogFinds(t *testing.T) {
	cat := catalog(t)
	if d := cat.Default(); d.Name != "default" || !d.Default || d.Config.Provider != "offline" {
		t.Errorf("default = %+v", d)
	}
	for _, c := range []struct{ provider, model, want string }{
		{"", "fast", "fast"},
		{"openai", "deepseek-chat", "fast"}, // deepseek is served as openai
		{"DeepSeek", "fast", "fast"},
		{"offline", "offline", "default"},
	} {
		m, err := cat.Find(c.provider, c.model)
		if err != nil || m.Name != c.want {
			t.Errorf("Find(%q, %q) = %s, %v; want %s", c.provider, c.model, m.Name, err, c.want)
		}
	}
	if _, err := cat.Find("", "deepseek-chat"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "default, fast") {
		t.Errorf("a model id without a provider: %v", err)
	}
}

func TestChoicesPersist(t *testing.T) {
	ctx := context.Background()
	cat := catalog(t)
	path := filepath.Join(t.TempDir(), ".ship", "models.json")
	c, err := OpenChoices(path, cat, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "telegram:chat:1", "fast", "telegram:42"); err != nil {
		t.Fatal(err)
	}
	again, err := OpenChoices(path, cat, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if ch, ok, _ := again.Get(ctx, "telegram:chat:1"); !ok || ch.Model != "fast" || ch.By != "telegram:42" || ch.At == 0 {
		t.Errorf("after reopening: %+v %v", ch, ok)
	}
	if err := again.Set(ctx, "telegram:chat:1", "", "telegram:42"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := again.Get(ctx, "telegram:chat:1"); ok {
		t.Error("back to the default still holds a choice")
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), "fast") {
		t.Errorf("file = %s", raw)
	}
	if err := os.WriteFile(path, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenChoices(path, cat, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a corrupt file: %v; want an error naming it", err)
	}
}
