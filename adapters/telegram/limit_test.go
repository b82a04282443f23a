package telegram_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// A person over the per-sender limit hears it once, not once per message
// (the note must not become a way to make the bot flood the chat), and
// every message stays in the log with its refusal.
func TestASenderOverTheLimitGetsOneShortNote(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, setup{engine: func(o *engine.Options) {
		o.UserLimit = ingress.UserLimiterOptions{Burst: 2, Now: clock.Now}
	}})
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		e.tg.Push(e.tg.PrivateText(42, "ann", text))
	}
	adaptertest.WaitFor(t, "every message logged, three with their refusal", func() bool {
		users, refusals := 0, 0
		for _, en := range e.entries("telegram:chat:42") {
			switch {
			case en.Role == chat.RoleUser:
				users++
			case en.Role == chat.RoleSystem && strings.Contains(en.Text, "rate limit"):
				refusals++
			}
		}
		return users == 5 && refusals == 3
	})
	e.waitSent(3)
	e.idle()
	e.stop() // waits for the adapter's notes in flight
	e.stop = nil
	var notes, answers int
	for _, s := range e.tg.Sent() {
		switch {
		case strings.Contains(s.Text, "faster than I can answer"):
			notes++
		case strings.HasPrefix(s.Text, "echo: "):
			answers++
		}
	}
	if notes != 1 || answers != 2 {
		t.Errorf("%d notes and %d answers sent, want one note and the two messages of the burst answered", notes, answers)
	}
}
