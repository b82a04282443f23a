package feishu_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/fakelark"
)

// typingBy reports whether rs holds a Typing reaction of operator.
func typingBy(rs []fakelark.Reaction, opType, opID string) bool {
	for _, r := range rs {
		if r.EmojiType == feishu.TypingEmoji && r.OperatorType == opType && r.OperatorID == opID {
			return true
		}
	}
	return false
}

func (e *env) waitReactions(messageID, what string, cond func([]fakelark.Reaction) bool) []fakelark.Reaction {
	e.t.Helper()
	rs, err := e.lk.WaitReactions(e.ctx(), messageID, cond)
	if err != nil {
		e.t.Fatalf("waiting for %s: %v (reactions %+v)", what, err, rs)
	}
	return rs
}

func TestTypingReactionIsOnWhileWorkingAndGoneAfter(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: typing})
	ev := e.lk.GroupText("oc_ty", "ou_ann", "@_user_1 think", e.lk.BotMention("@_user_1"))
	req := trigger(e, ev)
	stop := e.adapter.StartTyping(e.ctx(), req)
	rs := e.waitReactions(ev.MessageID, "the typing reaction", func(rs []fakelark.Reaction) bool {
		return typingBy(rs, "app", e.lk.AppID())
	})
	if len(rs) != 1 {
		t.Errorf("reactions %+v, want the one Typing reaction", rs)
	}
	stop(e.ctx())
	stop(e.ctx()) // safe twice
	if rs := e.lk.Reactions(ev.MessageID); len(rs) != 0 {
		t.Errorf("reactions after stop: %+v", rs)
	}
}

// Typing never costs a reply: a refused reaction is logged and stop does
// nothing.
func TestTypingFailureIsNotFatal(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: typing})
	ev := e.lk.P2PText("oc_tf", "ou_ann", "hi")
	req := trigger(e, ev)
	e.lk.FailNext(fakelark.PathReactionCreate, 1, 231002, "no permission to react")
	e.adapter.StartTyping(e.ctx(), req)(e.ctx())
	if rs := e.lk.Reactions(ev.MessageID); len(rs) != 0 || e.lk.Calls(fakelark.PathReactionCreate) != 1 {
		t.Errorf("reactions %+v after %d calls", rs, e.lk.Calls(fakelark.PathReactionCreate))
	}
}

// A run that crashed left its Typing reaction; the next start removes it,
// and only it: the users' reactions, Typing included, stay. The bot's is on
// the second page of the listing.
func TestClearTypingRemovesTheBotsLeftover(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: typing})
	ev := e.lk.GroupText("oc_tc", "ou_ann", "@_user_1 go", e.lk.BotMention("@_user_1"))
	req := trigger(e, ev)
	for i := range 55 {
		e.lk.React(ev.MessageID, feishu.TypingEmoji, "user", fmt.Sprintf("ou_%d", i))
	}
	e.lk.React(ev.MessageID, "THUMBSUP", "user", "ou_ann")
	_ = e.adapter.StartTyping(e.ctx(), req) // never stopped: the crash
	e.waitReactions(ev.MessageID, "the typing reaction", func(rs []fakelark.Reaction) bool {
		return typingBy(rs, "app", e.lk.AppID())
	})

	e2 := newEnv(t, setup{lk: e.lk, noStart: true, opts: typing}) // the restart
	if err := e2.adapter.ClearTyping(e2.ctx(), req); err != nil {
		t.Fatal(err)
	}
	rs := e.lk.Reactions(ev.MessageID)
	if typingBy(rs, "app", e.lk.AppID()) || len(rs) != 56 {
		t.Errorf("%d reactions left, the bot's among them: %v", len(rs), typingBy(rs, "app", e.lk.AppID()))
	}
	if err := e2.adapter.ClearTyping(e2.ctx(), req); err != nil {
		t.Errorf("a second clean-up: %v", err)
	}
}

// At start-up the engine clears a crashed run's reaction while the message
// runs again: the new run's reaction survives the clean-up (Feishu may
// hand it the leftover one), and its stop removes it.
func TestClearTypingSparesTheRunningTypist(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: typing})
	ev := e.lk.P2PText("oc_tr", "ou_ann", "again")
	req := trigger(e, ev)
	e.lk.React(ev.MessageID, feishu.TypingEmoji, "app", e.lk.AppID()) // the crashed process's
	stop := e.adapter.StartTyping(e.ctx(), req)
	// The add is under way (the worse order: it gets the leftover back).
	e.waitFor("the typist's add", func() bool { return e.lk.Calls(fakelark.PathReactionCreate) == 1 })
	if err := e.adapter.ClearTyping(e.ctx(), req); err != nil {
		t.Fatal(err)
	}
	e.waitReactions(ev.MessageID, "the running typist's reaction", func(rs []fakelark.Reaction) bool {
		return typingBy(rs, "app", e.lk.AppID())
	})
	stop(e.ctx())
	if rs := e.lk.Reactions(ev.MessageID); len(rs) != 0 {
		t.Errorf("reactions left: %+v", rs)
	}
	if strings.Contains(e.logs.String(), "typing reaction not removed") {
		t.Error("the typist's reaction was taken by the clean-up")
	}
}

// A stop whose context is already done still takes the reaction off, once
// it is on.
func TestTypingStoppedEarlyIsStillRemoved(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: typing})
	ev := e.lk.P2PText("oc_ts", "ou_ann", "quick")
	req := trigger(e, ev)
	done, cancel := context.WithCancel(e.ctx())
	cancel()
	e.adapter.StartTyping(e.ctx(), req)(done)
	if err := e.lk.Wait(e.ctx(), func() bool {
		h := e.lk.ReactionHistory(ev.MessageID)
		return len(h) == 1 && !h[0].Removed.IsZero()
	}); err != nil {
		t.Fatalf("the reaction was not removed: %+v", e.lk.ReactionHistory(ev.MessageID))
	}
}

// typing turns streaming on, which brings the typing reaction with it.
func typing(o *feishu.Options) { o.Streaming = true }
