package feishu_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// streamEnv is an adapter with streaming on, driven directly the way the
// engine drives it: OpenStream, Show, Finish.
func streamEnv(t *testing.T, lk *fakelark.Server) *env {
	// The first card goes at once: these tests drive Show themselves.
	return newEnv(t, setup{lk: lk, noStart: true, opts: func(o *feishu.Options) { o.Streaming, o.FirstCardAfter = true, -1 }})
}

// trigger makes the fake know a user's message and returns the request
// context a run answering it carries.
func trigger(e *env, ev fakelark.Event) dispatch.RequestContext {
	e.lk.Know(ev)
	key := "feishu:chat:" + ev.ChatID
	if ev.ThreadID != "" {
		key += ":thread:" + ev.ThreadID
	}
	return dispatch.RequestContext{Channel: chat.ChannelFeishu, ChatID: ev.ChatID, ThreadID: ev.ThreadID,
		ChatKey: key, UserID: ev.SenderOpenID, ChatType: ev.ChatType, MessageID: ev.MessageID}
}

func (e *env) open(req dispatch.RequestContext, resume ...string) dispatch.ReplyStream {
	e.t.Helper()
	s, ok := e.adapter.OpenStream(e.ctx(), req, resume)
	if !ok {
		e.t.Fatal("OpenStream: not ok with streaming on")
	}
	return s
}

func (e *env) show(s dispatch.ReplyStream, text string) []string {
	e.t.Helper()
	ids, err := s.Show(e.ctx(), text)
	if err != nil {
		e.t.Fatalf("Show(%.20q): %v", text, err)
	}
	return ids
}

func (e *env) finish(s dispatch.ReplyStream, text string) {
	e.t.Helper()
	if _, err := s.Finish(e.ctx(), text); err != nil {
		e.t.Fatalf("Finish: %v", err)
	}
}

// texts are the texts of msgs.
func texts(msgs []fakelark.Shown) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text
	}
	return out
}

func TestStreamedReplyIsOneCardUpdatedInPlace(t *testing.T) {
	e := streamEnv(t, nil)
	ev := e.lk.GroupText("oc_s", "ou_ann", "@_user_1 explain", e.lk.BotMention("@_user_1")).InThread("omt_7", "om_root")
	req := trigger(e, ev)
	s := e.open(req)
	if got := s.Interval(); got != feishu.StreamInterval || got < 200*time.Millisecond {
		t.Errorf("Interval %v: Feishu takes at most 5 updates a second of one message", got)
	}
	steps := []string{"It", "It depends on", "It depends on <what> you \"mean\"", "It depends on <what> you \"mean\".\nFirst, …"}
	var ids []string
	for _, text := range steps[:3] {
		got := e.show(s, text)
		if ids == nil {
			ids = got
		}
		if len(got) != 1 || got[0] != ids[0] {
			t.Fatalf("visible %v after %q, want the one card %v", got, text, ids)
		}
	}
	e.finish(s, steps[3])

	chat := e.lk.Chat("oc_s")
	if len(chat) != 1 {
		t.Fatalf("the chat shows %d messages, want one card: %+v", len(chat), chat)
	}
	m := chat[0]
	if m.MessageID != ids[0] || m.MsgType != "interactive" || m.Text != steps[3] || m.ReplyTo != ev.MessageID || m.ThreadID != "omt_7" {
		t.Errorf("the card %+v: want the full text, a reply to %s in thread omt_7", m, ev.MessageID)
	}
	var seen []string
	for _, u := range e.lk.Updates(ids[0]) {
		seen = append(seen, u.Text)
	}
	if want := steps[1:]; !slices.Equal(seen, want) {
		t.Errorf("the card showed %q after it was sent, want %q", seen, want)
	}
	if sent := e.lk.Sent(); len(sent) != 1 || sent[0].Path != fakelark.PathReply || !sent[0].ReplyInThread {
		t.Errorf("sent %+v, want one card replying in the thread", sent)
	}
}

func TestStreamInAOneToOneChatIsANewMessage(t *testing.T) {
	e := streamEnv(t, nil)
	req := trigger(e, e.lk.P2PText("oc_p", "ou_ann", "hi"))
	s := e.open(req)
	e.show(s, "Hello")
	e.finish(s, "Hello there")
	sent := e.lk.Sent()
	if len(sent) != 1 || sent[0].Path != fakelark.PathCreate || sent[0].ChatID != "oc_p" || sent[0].MsgType != "interactive" {
		t.Fatalf("sent %+v, want one new card in the chat", sent)
	}
	if got := texts(e.lk.Chat("oc_p")); !slices.Equal(got, []string{"Hello there"}) {
		t.Errorf("the chat shows %q", got)
	}
}

// A reply finished before anything was shown goes as an ordinary reply: one card.
func TestFinishWithoutShowSendsText(t *testing.T) {
	e := streamEnv(t, nil)
	s := e.open(trigger(e, e.lk.P2PText("oc_q", "ou_ann", "hi")))
	e.finish(s, "short answer")
	if sent := e.lk.Sent(); len(sent) != 1 || sent[0].MsgType != "interactive" || sent[0].Text != "short answer" || e.lk.Calls(fakelark.PathUpdate) != 0 {
		t.Errorf("sent %+v, want one card, never updated", sent)
	}
}

// After a crash the new run is handed the cards the old one left: it
// updates them instead of sending new ones, and deletes what its reply
// does not need.
func TestResumedStreamTakesOverTheCards(t *testing.T) {
	e := streamEnv(t, nil)
	ev := e.lk.GroupText("oc_r", "ou_ann", "@_user_1 long story", e.lk.BotMention("@_user_1"))
	req := trigger(e, ev)
	long := strings.Repeat("an interrupted sentence.\n\n", 1500) // two cards
	left := e.show(e.open(req), long)
	if len(left) != 2 {
		t.Fatalf("visible %v, want two cards", left)
	}
	// "Restart": a new adapter on the same platform.
	e2 := streamEnv(t, e.lk)
	s := e2.open(req, left...)
	if got := e2.show(s, "A shorter"); !slices.Equal(got, left) {
		t.Errorf("visible %v after resuming %v", got, left)
	}
	e2.finish(s, "A shorter answer.")
	if n := len(e.lk.Sent()); n != 2 {
		t.Errorf("%d messages sent in all, want the 2 of the first attempt only", n)
	}
	chat := e.lk.Chat("oc_r")
	if len(chat) != 1 || chat[0].MessageID != left[0] || chat[0].Text != "A shorter answer." {
		t.Errorf("the chat shows %+v, want the first card with the new answer", chat)
	}
	if got := e.lk.Deleted(); !slices.Equal(got, left[1:]) {
		t.Errorf("deleted %v, want the card the answer no longer needs (%s)", got, left[1])
	}
}

// A card that can no longer be updated (deleted by someone, or an id that
// is no card) is sent anew: the reply is not lost.
func TestFinishReplacesACardThatCannotBeUpdated(t *testing.T) {
	e := streamEnv(t, nil)
	req := trigger(e, e.lk.P2PText("oc_x", "ou_ann", "hi"))
	s := e.open(req, "om_no_such_message")
	e.finish(s, "the answer")
	if got := texts(e.lk.Chat("oc_x")); !slices.Equal(got, []string{"the answer"}) {
		t.Errorf("the chat shows %q", got)
	}
}

// A streamed reply over one card's limit grows into more cards, cut as a
// finished reply is: a code block cut between cards keeps its fence and
// language in each.
func TestLongStreamedReplyIsSplitLikeAReply(t *testing.T) {
	e := streamEnv(t, nil)
	var b strings.Builder
	b.WriteString("Here is the code:\n```go\n")
	for i := 0; b.Len() < 40_000; i++ {
		fmt.Fprintf(&b, "x%d := \"<%d>\" // a line of the program\n", i, i)
	}
	b.WriteString("```\nDone.")
	full := b.String()
	s := e.open(trigger(e, e.lk.P2PText("oc_l", "ou_ann", "code please")))
	var first string
	for _, n := range []int{3000, 20_000, 35_000} {
		ids := e.show(s, full[:n])
		if first == "" {
			first = ids[0]
		}
		if ids[0] != first {
			t.Fatalf("the first card changed: %v", ids)
		}
	}
	e.finish(s, full)
	want := markdown.Feishu(full)
	chat := e.lk.Chat("oc_l")
	if len(chat) != len(want) || len(want) < 2 {
		t.Fatalf("the chat shows %d parts, want the renderer's %d", len(chat), len(want))
	}
	for i, m := range chat {
		r := fakelark.RenderCard(m.Content)
		if n := len(m.Content); n > fakelark.MaxCardBytes || m.MsgType != "interactive" {
			t.Errorf("part %d: %d bytes, %s", i, n, m.MsgType)
		}
		if len(r.CodeBlocks) != 1 || r.CodeBlocks[0].Lang != "go" || strings.Contains(r.Text, "```") {
			t.Errorf("part %d shows %d code blocks (%+v), want one in go", i, len(r.CodeBlocks), r.CodeBlocks)
		}
	}
	if !strings.HasSuffix(chat[len(chat)-1].Text, "Done.") {
		t.Error("the last card does not end the reply")
	}
	if len(e.lk.Sent()) != len(want) || len(e.lk.Deleted()) != 0 {
		t.Errorf("%d sent, %d deleted: want %d cards and nothing thrown away", len(e.lk.Sent()), len(e.lk.Deleted()), len(want))
	}
}

func TestAbandonDeletesWhatWasShown(t *testing.T) {
	e := streamEnv(t, nil)
	s := e.open(trigger(e, e.lk.P2PText("oc_a", "ou_ann", "hi")))
	ids := e.show(s, "Half an ans")
	e.show(s, "Half an answer")
	if err := s.Abandon(e.ctx()); err != nil {
		t.Fatal(err)
	}
	if chat := e.lk.Chat("oc_a"); len(chat) != 0 {
		t.Errorf("the chat still shows %+v", chat)
	}
	if got := e.lk.Deleted(); !slices.Equal(got, ids) {
		t.Errorf("deleted %v, want %v", got, ids)
	}
}

func TestStreamingOffIsNotOpened(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	if _, ok := e.adapter.OpenStream(e.ctx(), trigger(e, e.lk.P2PText("oc_o", "ou_ann", "hi")), nil); ok {
		t.Error("OpenStream ok with streaming off")
	}
}

// A rate-limited update asks the engine to wait (the gateway's reset, else
// a second) and is not counted as shown; Finish waits on its own.
func TestRateLimitedUpdateAsksToWait(t *testing.T) {
	e := streamEnv(t, nil)
	s := e.open(trigger(e, e.lk.P2PText("oc_t", "ou_ann", "hi")))
	ids := e.show(s, "one")
	for _, code := range []int{fakelark.CodeRateLimit, fakelark.CodeChatRate} {
		e.lk.FailNext(fakelark.PathUpdate, 1, code, "request trigger frequency limit")
		_, err := s.Show(e.ctx(), fmt.Sprintf("one two %d", code))
		if wait, ok := dispatch.RetryAfterOf(err); !ok || wait != time.Second {
			t.Errorf("code %d: Show error %v (wait %v), want a *dispatch.RetryAfter of 1s", code, err, wait)
		}
	}
	if n := len(e.lk.Updates(ids[0])); n != 0 {
		t.Errorf("%d updates went through", n)
	}
	e.show(s, "one two three")
	e.lk.FailNext(fakelark.PathUpdate, 2, fakelark.CodeChatRate, "too fast")
	e.finish(s, "one two three four")
	if got := texts(e.lk.Chat("oc_t")); !slices.Equal(got, []string{"one two three four"}) {
		t.Errorf("the chat shows %q", got)
	}
}

func TestExpiredTokenOnAnUpdateIsRefreshed(t *testing.T) {
	e := streamEnv(t, nil)
	s := e.open(trigger(e, e.lk.P2PText("oc_e", "ou_ann", "hi")))
	e.show(s, "before")
	issued := e.lk.TokensIssued()
	e.lk.RevokeTokens()
	e.show(s, "before and after")
	if n := e.lk.TokensIssued(); n != issued+1 {
		t.Errorf("%d new tokens, want 1", n-issued)
	}
	if got := texts(e.lk.Chat("oc_e")); !slices.Equal(got, []string{"before and after"}) {
		t.Errorf("the chat shows %q", got)
	}
}

// adapters.feishu.streaming reaches the adapter: "auto" and unset stream,
// "off" does not.
func TestStreamingSettingFromConfig(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	req := trigger(e, e.lk.P2PText("oc_c", "ou_ann", "hi"))
	for mode, want := range map[string]bool{"": true, "auto": true, "off": false} {
		var cfg config.Config
		cfg.Dir = t.TempDir()
		cfg.Adapters.Feishu.AppID, cfg.Adapters.Feishu.AppSecret = e.lk.AppID(), appSecret
		cfg.Adapters.Feishu.Domain, cfg.Adapters.Feishu.Streaming = e.lk.URL(), mode
		a, err := feishu.FromConfig(cfg, e.engine, zerolog.Nop())
		if err != nil {
			t.Fatalf("%q: %v", mode, err)
		}
		if _, ok := a.OpenStream(e.ctx(), req, nil); ok != want {
			t.Errorf("streaming %q: OpenStream ok=%v, want %v", mode, ok, want)
		}
	}
}

// A card that can be neither updated nor recalled stays as the person sees
// it. It is sent again only when it is known to show less than its part:
// the person may read a partial card and the whole answer, never the whole
// answer twice.
func TestACardThatCanBeNeitherUpdatedNorRecalledIsNeverShownTwice(t *testing.T) {
	t.Run("known to show less: sent again", func(t *testing.T) {
		e := streamEnv(t, nil)
		s := e.open(trigger(e, e.lk.P2PText("oc_k", "ou_ann", "hi")))
		e.show(s, "one")
		e.show(s, "one two") // an update: the card is known to show this
		e.lk.FailNext(fakelark.PathUpdate, 3, fakelark.CodeNotCard, "refused")
		e.lk.FailNext(fakelark.PathDelete, 3, fakelark.CodeBadRequest, "refused")
		e.finish(s, "one two three")
		if got := texts(e.lk.Chat("oc_k")); !slices.Equal(got, []string{"one two", "one two three"}) {
			t.Errorf("the chat shows %q, want the stale partial card and the whole answer once", got)
		}
	})
	t.Run("may already show it: not sent again", func(t *testing.T) {
		e := streamEnv(t, nil)
		// A card an interrupted run left: what it shows is not known.
		first := e.open(trigger(e, e.lk.P2PText("oc_u", "ou_ann", "hi")))
		ids := e.show(first, "the whole answer")
		s := e.open(trigger(e, e.lk.P2PText("oc_u", "ou_ann", "hi again")), ids...)
		e.lk.FailNext(fakelark.PathUpdate, 3, fakelark.CodeNotCard, "refused")
		e.lk.FailNext(fakelark.PathDelete, 3, fakelark.CodeBadRequest, "refused")
		_, err := s.Finish(e.ctx(), "the whole answer")
		if err == nil || !strings.Contains(err.Error(), "neither updated nor recalled") {
			t.Errorf("Finish: %v, want the part reported as not delivered", err)
		}
		if got := texts(e.lk.Chat("oc_u")); !slices.Equal(got, []string{"the whole answer"}) {
			t.Errorf("the chat shows %q, want the answer once", got)
		}
	})
}

// A reply done before its first card is due goes out once, as text: not a
// card sent and updated a moment later (two calls for one message).
func TestAReplyDoneBeforeTheFirstCardGoesOutOnce(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: func(o *feishu.Options) { o.Streaming, o.FirstCardAfter = true, time.Hour }})
	s := e.open(trigger(e, e.lk.P2PText("oc_f", "ou_ann", "hi")))
	if _, err := s.Show(e.ctx(), "a short"); err == nil {
		t.Fatal("the first card went out at once")
	} else if wait, ok := dispatch.RetryAfterOf(err); !ok || wait <= 0 {
		t.Fatalf("Show: %v, want a wait until the first card is due", err)
	}
	e.finish(s, "a short answer")
	if sent := e.lk.Sent(); len(sent) != 1 || sent[0].MsgType != "interactive" || sent[0].Text != "a short answer" {
		t.Errorf("sent %+v, want one card", sent)
	}
	if n := e.lk.Calls(fakelark.PathUpdate); n != 0 {
		t.Errorf("%d card updates, want none", n)
	}
}
