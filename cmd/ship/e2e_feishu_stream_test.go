package main_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/fakelark"
)

const feishuStreamSecret = "e2e-feishu-stream-secret-never-printed"

// startStreamingFeishu runs ship against the Feishu fake and the slow
// writer (e2e_stream_test.go), streaming at its default ("auto").
func startStreamingFeishu(t *testing.T) (*fakelark.Server, *shipProc, string, []string) {
	t.Helper()
	lk, err := fakelark.Start(fakelark.Options{AppSecret: feishuStreamSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lk.Close)
	fake := startFake(t, slowWriter)
	dir := initProject(t)
	setConfig(t, dir, "queue", `{"concurrency": 4}`) // two chats side by side, no "busy" notes
	env := modelEnv(fake, "FEISHU_APP_ID="+lk.AppID(), "FEISHU_APP_SECRET="+feishuStreamSecret, "FEISHU_DOMAIN="+lk.URL())
	p := startShip(t, dir, env)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := lk.WaitConnected(ctx); err != nil {
		t.Fatalf("ship never opened the Feishu websocket: %v", err)
	}
	return lk, p, dir, env
}

// pushFeishu delivers ev and waits for ship's ack.
func pushFeishu(ctx context.Context, t *testing.T, lk *fakelark.Server, ev fakelark.Event) {
	t.Helper()
	if ack, err := lk.PushEvent(ctx, ev); err != nil || ack.Code != 200 {
		t.Fatalf("push: ack %d %s, %v", ack.Code, ack.Payload, err)
	}
}

// waitChat waits until want holds for what chatID shows.
func waitChat(ctx context.Context, t *testing.T, lk *fakelark.Server, chatID string, want func([]fakelark.Shown) bool) []fakelark.Shown {
	t.Helper()
	var got []fakelark.Shown
	if err := lk.Wait(ctx, func() bool {
		got = lk.Chat(chatID)
		return want(got)
	}); err != nil {
		t.Fatalf("waiting for the reply in %s: %v; it shows %+v", chatID, err, got)
	}
	return got
}

// showsText is true once the last card shows md as Feishu draws it.
func showsText(md string) func([]fakelark.Shown) bool {
	want := drawn(md)
	return func(s []fakelark.Shown) bool { return len(s) > 0 && s[len(s)-1].Text == want }
}

// drawn is what a reader reads of the reply md: its card Markdown
// (markdown.Feishu) as Feishu draws it.
func drawn(md string) string {
	var out []string
	for _, p := range markdown.Feishu(md) {
		out = append(out, fakelark.RenderMarkdown(p).Text)
	}
	return strings.Join(out, "\n")
}

// typingGone reports whether the app has no Typing reaction on messageID.
func typingGone(lk *fakelark.Server, messageID string) bool {
	for _, r := range lk.Reactions(messageID) {
		if r.EmojiType == "Typing" && r.OperatorType == "app" {
			return false
		}
	}
	return true
}

// TestE2EStreamedRepliesOnFeishu: a reply written slowly shows as one card
// updated in place, in the thread of the question, then as the whole
// reply; a Typing reaction is on the question while it is written and gone
// once the reply is out.
func TestE2EStreamedRepliesOnFeishu(t *testing.T) {
	lk, p, _, _ := startStreamingFeishu(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	full := longText(1200)
	asked := lk.GroupText("oc_stream_e2e", "ou_bob", "@_user_1 write 1200", lk.BotMention("@_user_1")).InThread("omt_e2e", "om_e2e_root")
	pushFeishu(ctx, t, lk, asked)
	pushFeishu(ctx, t, lk, lk.P2PText("oc_stream_p2p", "ou_ann", "write 1200"))
	shown := waitChat(ctx, t, lk, "oc_stream_e2e", showsText(full))
	private := waitChat(ctx, t, lk, "oc_stream_p2p", showsText(full))

	if len(shown) != 1 {
		t.Fatalf("the group shows %d messages, want the one card: %+v", len(shown), shown)
	}
	card := shown[0]
	if card.MsgType != "interactive" || card.ReplyTo != asked.MessageID || card.ThreadID != "omt_e2e" {
		t.Errorf("the reply %+v: want a card replying to %s in thread omt_e2e", card, asked.MessageID)
	}
	updates := lk.Updates(card.MessageID)
	if len(updates) < 3 {
		t.Errorf("the card was updated %d times, want ≥ 3", len(updates))
	}
	for _, u := range updates {
		if !strings.HasPrefix(drawn(full), u.Text) {
			t.Errorf("update %.40q… is not a beginning of the reply", u.Text)
		}
	}
	for i := 1; i < len(updates)-1; i++ { // the last is the finished text, not paced
		if gap := updates[i].At.Sub(updates[i-1].At); gap < 400*time.Millisecond {
			t.Errorf("updates %d and %d came %s apart; Feishu takes at most 5 a second", i, i+1, gap)
		}
	}
	if len(private) != 1 || private[0].MsgType != "interactive" || len(lk.Updates(private[0].MessageID)) < 3 {
		t.Errorf("the one-to-one chat shows %+v, want one card updated in place", private)
	}

	// Typing: on the question before the card came, taken off once the
	// reply was out, nothing left.
	if err := lk.Wait(ctx, func() bool { return typingGone(lk, asked.MessageID) }); err != nil {
		t.Fatalf("the Typing reaction stayed: %+v", lk.Reactions(asked.MessageID))
	}
	sent := lk.Sent()
	var cardAt time.Time
	for _, s := range sent {
		if s.MessageID == card.MessageID {
			cardAt = s.At
		}
	}
	var typed bool
	for _, r := range lk.ReactionHistory(asked.MessageID) {
		if r.EmojiType == "Typing" && r.OperatorType == "app" && r.At.Before(cardAt) && r.Removed.After(cardAt) {
			typed = true
		}
	}
	if !typed {
		t.Errorf("no Typing reaction while the reply was written: %+v", lk.ReactionHistory(asked.MessageID))
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, feishuStreamSecret) {
			t.Error("the Feishu app secret appears in ship's output")
		}
	}
}

// TestE2EFeishuKilledMidStreamEndsWithOneReply: ship is killed with
// SIGKILL while a card is being written; after the restart the chat shows
// one complete reply, in the card the first attempt began, and no Typing
// reaction is left on the question.
func TestE2EFeishuKilledMidStreamEndsWithOneReply(t *testing.T) {
	lk, p, dir, env := startStreamingFeishu(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	full := longText(3000)
	asked := lk.GroupText("oc_kill_e2e", "ou_bob", "@_user_1 write 3000", lk.BotMention("@_user_1"))
	pushFeishu(ctx, t, lk, asked)
	half := waitChat(ctx, t, lk, "oc_kill_e2e", func(s []fakelark.Shown) bool {
		return len(s) == 1 && s[0].Updates >= 1 && s[0].Text != drawn(full)
	})
	first := half[0].MessageID
	if typingGone(lk, asked.MessageID) {
		t.Error("no Typing reaction on the question while the reply is written")
	}
	p.stop(t, syscall.SIGKILL)

	p = startShip(t, dir, env)
	shown := waitChat(ctx, t, lk, "oc_kill_e2e", showsText(full))
	if len(shown) != 1 || shown[0].MessageID != first {
		t.Errorf("the chat shows %+v; want one message, the first attempt's card (%s), complete", shown, first)
	}
	if n := len(lk.Sent()); n != 1 {
		t.Errorf("%d messages were sent, want 1: the restarted run updates the card it was handed", n)
	}
	if err := lk.Wait(ctx, func() bool { return typingGone(lk, asked.MessageID) }); err != nil {
		t.Errorf("a Typing reaction was left on the question: %+v", lk.Reactions(asked.MessageID))
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
