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

// A cluster section that names no NATS would run a single process while
// its operator believes it is one replica of a group: refused, with how to
// fix it; the NATS URL from the environment completes it.
func TestAClusterSectionWithoutNATSIsRefused(t *testing.T) {
	for _, section := range []string{`{}`, `{"replica": "r1", "partitions": 8}`, `{"nats": {"url": "${NATS_ADDR}"}}`} {
		dir := t.TempDir()
		write(t, dir, FileName, `{"cluster": `+section+`}`)
		_, err := Load(dir, envOf(nil))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cluster.nats.url") {
			t.Errorf("cluster %s: err = %v, want a refusal naming cluster.nats.url", section, err)
		}
		cfg, err := Load(dir, envOf(map[string]string{"SHIP_NATS_URL": "nats://127.0.0.1:4222"}))
		if err != nil || !cfg.Cluster.On() {
			t.Errorf("cluster %s with SHIP_NATS_URL: on=%v err=%v", section, cfg.Cluster.On(), err)
		}
	}
	dir := t.TempDir()
	write(t, dir, FileName, `{"queue": {"concurrency": 2}}`)
	if cfg, err := Load(dir, envOf(nil)); err != nil || cfg.Cluster.On() {
		t.Errorf("no cluster section: on=%v err=%v, want a single process", cfg.Cluster.On(), err)
	}
}
