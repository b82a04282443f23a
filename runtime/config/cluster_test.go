package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestReplicaNamesAreLettersDigitsDashAndUnderscore(t *testing.T) {
	cases := map[string]bool{
		"a": true, "replica-1_B": true, strings.Repeat("r", 64): true,
		strings.Repeat("r", 65): false, "a.b": false, "a b": false, "é": false, "a/b": false, "a*": false,
	}
	for name, ok := range cases {
		dir := t.TempDir()
		write(t, dir, FileName, `{"cluster": {"replica": "`+name+`", "nats": {"url": "nats://127.0.0.1:4222"}}}`)
		cfg, err := Load(dir, envOf(nil))
		if ok && (err != nil || cfg.Cluster.Replica != name) {
			t.Errorf("replica %q: %v, want it accepted", name, err)
		}
		if !ok && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cluster.replica")) {
			t.Errorf("replica %q: err = %v, want one naming cluster.replica", name, err)
		}
	}
}

func TestClusterTelegramWebhookNeedsAFixedSecret(t *testing.T) {
	const base = `"cluster": {"replica": "r1", "nats": {"url": "nats://127.0.0.1:4222"}}`
	tg := `"adapters": {"telegram": {"botToken": "1:x", "mode": "webhook", "webhookUrl": "https://bot.example.com"%s}}`
	dir := t.TempDir()
	write(t, dir, FileName, `{`+base+`, `+fmt.Sprintf(tg, "")+`}`)
	if _, err := Load(dir, envOf(nil)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "webhookSecret") {
		t.Errorf("cluster + telegram webhook without a secret: err = %v, want one naming webhookSecret", err)
	}
	if _, err := Load(dir, envOf(map[string]string{"TELEGRAM_WEBHOOK_SECRET": "s3cret-s3cret"})); err != nil {
		t.Errorf("with TELEGRAM_WEBHOOK_SECRET: %v", err)
	}
	write(t, dir, FileName, `{`+fmt.Sprintf(tg, "")+`}`)
	if _, err := Load(dir, envOf(nil)); err != nil {
		t.Errorf("a process on its own makes a secret up: %v", err)
	}
}
