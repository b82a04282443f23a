package telegram_test

import (
	"testing"

	"github.com/shipmyagent/ship/adapters/telegram"
)

// "typing…" goes with streaming: on by default in ship.json, it shows in the
// chat while a turn runs; streaming "off" sends nothing but the reply.
func TestTypingFollowsTheStreamingSetting(t *testing.T) {
	for _, on := range []bool{true, false} {
		e := newEnv(t, setup{opts: func(o *telegram.Options) { o.Streaming = on }})
		e.tg.Push(e.tg.PrivateText(4242, "ann", "hello"))
		sent := e.waitSent(1)
		actions := 0
		for _, a := range e.tg.ChatActions() {
			if a.ChatID == 4242 && a.Action == "typing" {
				actions++
				if a.At.After(sent[0].At) {
					t.Errorf("streaming %v: typing after the reply", on)
				}
			}
		}
		if (actions > 0) != on {
			t.Errorf("streaming %v: %d typing actions", on, actions)
		}
		e.shutdown()
	}
}
