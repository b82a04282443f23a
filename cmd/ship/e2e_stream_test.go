package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// streamPieces is how many pieces a slow reply is written in, streamPause
// the model's pause before each: about four seconds a reply, time for
// several one-a-second updates in the chat.
const (
	streamPieces = 40
	streamPause  = 100 * time.Millisecond
	// slowerPieces make a reply take about 15 s: time for a group's
	// reply to be edited (a group's reply changes about every 3.5 s).
	slowerPieces = 150
)

// slowWriter is a scripted model that answers "write N" with a chat_send of
// longText(N), written slowly (in about 4 s; "write N slowly": in about
// 15 s, see slowerPieces); once the tool result is in, it ends the turn.
func slowWriter(r fakeopenai.Request) fakeopenai.Response {
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	n := 0
	for _, f := range strings.Fields(r.LastUser()) {
		if v, err := strconv.Atoi(f); err == nil {
			n = v
		}
	}
	args, _ := json.Marshal(map[string]string{"text": longText(n)})
	pieces := streamPieces
	if strings.Contains(r.LastUser(), "slowly") {
		pieces = slowerPieces
	}
	return fakeopenai.Response{
		ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}},
		Pace:      fakeopenai.Pace{Bytes: len(args)/pieces + 1, Every: streamPause},
	}
}

// longText is about n characters of numbered lines in paragraphs, with a
// code block in the middle, so that a cut may fall inside it.
func longText(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		switch {
		case i%40 == 10:
			b.WriteString("```go\n")
		case i%40 == 30:
			b.WriteString("```\n\n")
		}
		fmt.Fprintf(&b, "line %04d: the quick brown fox jumps over the lazy dog\n", i)
		if i%7 == 0 && (i%40 < 10 || i%40 >= 30) {
			b.WriteString("\n")
		}
	}
	if strings.Count(b.String(), "```")%2 == 1 {
		b.WriteString("```\n")
	}
	return strings.TrimSpace(b.String())
}

// shownText is md as a Telegram client shows it: ship renders the model's
// Markdown into text and entities.
func shownText(md string) string {
	text, _ := markdown.Telegram(md)
	return text
}

func startStreamingShip(t *testing.T, token string) (*faketelegram.Server, *shipProc, string, []string) {
	t.Helper()
	tg := startTelegram(t, token)
	fake := startFake(t, slowWriter)
	dir := initProject(t)
	// Two chats are written to side by side (no "busy" notes).
	setConfig(t, dir, "queue", `{"concurrency": 4}`)
	env := modelEnv(fake, telegramEnv(tg, token)...)
	return tg, startShip(t, dir, env), dir, env
}

// shownIn returns the bot's messages in a chat (and topic) as they stand.
func shownIn(tg *faketelegram.Server, chatID, thread int64) []faketelegram.Sent {
	var out []faketelegram.Sent
	for _, s := range tg.Shown() {
		if s.ChatID == chatID && s.ThreadID == thread {
			out = append(out, s)
		}
	}
	return out
}

// waitShown waits until the chat shows want as the bot's last message.
func waitShown(ctx context.Context, t *testing.T, tg *faketelegram.Server, chatID, thread int64, want func([]faketelegram.Sent) bool) []faketelegram.Sent {
	t.Helper()
	var got []faketelegram.Sent
	if err := tg.Wait(ctx, func() bool {
		got = shownIn(tg, chatID, thread)
		return want(got)
	}); err != nil {
		t.Fatalf("waiting for the reply in chat %d/%d: %v; it shows %+v", chatID, thread, err, got)
	}
	return got
}

func endsWith(text string) func([]faketelegram.Sent) bool {
	return func(s []faketelegram.Sent) bool { return len(s) > 0 && s[len(s)-1].Text == text }
}

// TestE2EStreamedRepliesOnTelegram: a reply written slowly shows as drafts
// in a private chat and as one message edited in place in a forum topic,
// there at most once per turn of the group's budget (about 3.5 s: sends and
// edits share the group's 20 a minute), with "typing…" until the reply is
// out.
func TestE2EStreamedRepliesOnTelegram(t *testing.T) {
	const group, topic = int64(-100900), int64(5)
	tg, p, _, _ := startStreamingShip(t, "4242:e2e-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	full := shownText(longText(1200))
	tg.Push(tg.PrivateText(77, "ann", "write 1200"))
	asked := tg.TopicText(group, topic, 78, "bob", tg.Mention()+" write 1200")
	tg.Push(asked)
	private := waitShown(ctx, t, tg, 77, 0, endsWith(full))
	inTopic := waitShown(ctx, t, tg, group, topic, endsWith(full))

	// Private chat: drafts while written, then the reply, once.
	var drafts []faketelegram.Draft
	for _, d := range tg.Drafts() {
		if d.ChatID == 77 {
			drafts = append(drafts, d)
		}
	}
	if len(drafts) < 3 {
		t.Errorf("%d drafts in the private chat, want ≥ 3", len(drafts))
	}
	for _, d := range drafts {
		if !strings.HasPrefix(full, d.Text) {
			t.Errorf("draft %q is not a beginning of the reply", d.Text)
		}
	}
	if len(private) != 1 {
		t.Errorf("the private chat shows %d messages, want the one reply", len(private))
	}

	// Topic: one message, in the topic, replying to the question, edited
	// in place at most once per group turn, the finishing edit too.
	if len(inTopic) != 1 {
		t.Fatalf("the topic shows %d messages, want one: %+v", len(inTopic), inTopic)
	}
	msg := inTopic[0]
	if askedID := asked["message"].(map[string]any)["message_id"].(int64); msg.ReplyTo != askedID {
		t.Errorf("the reply answers message %d, want %d", msg.ReplyTo, askedID)
	}
	var edits []faketelegram.Edit
	for _, e := range tg.Edits() {
		if e.ChatID == group && e.MessageID == msg.MessageID {
			edits = append(edits, e)
			if !strings.HasPrefix(full, e.Text) {
				t.Errorf("edit %q is not a beginning of the reply", e.Text)
			}
		}
	}
	if len(edits) < 1 {
		t.Errorf("the topic's message was edited %d times, want ≥ 1", len(edits))
	}
	prev := msg.At
	for i, e := range edits {
		if gap := e.At.Sub(prev); gap < 3*time.Second {
			t.Errorf("edit %d came %s after the update before it; a group's reply changes at most every 3 s", i+1, gap)
		}
		prev = e.At
	}
	for _, e := range tg.Edits() {
		if e.ChatID == 77 {
			t.Errorf("a private chat's reply was edited; drafts are for that: %+v", e)
		}
	}

	t.Logf("private chat: %d drafts (%s), then one message of %d characters", len(drafts), lengths(drafts, func(d faketelegram.Draft) string { return d.Text }), len(private[0].Text))
	t.Logf("topic: message %d edited %d times (%s)", msg.MessageID, len(edits), lengths(edits, func(e faketelegram.Edit) string { return e.Text }))

	// "typing…" while the turn ran, in the topic too, and none after the reply.
	lastEdit := edits[len(edits)-1].At
	var privateTyping, topicTyping int
	for _, a := range tg.ChatActions() {
		switch {
		case a.ChatID == 77:
			privateTyping++
			if a.At.After(private[0].At) {
				t.Errorf("typing in the private chat after the reply was sent")
			}
		case a.ChatID == group:
			topicTyping++
			if a.ThreadID != topic {
				t.Errorf("typing sent to thread %d, want the topic %d", a.ThreadID, topic)
			}
			if a.At.After(lastEdit) {
				t.Errorf("typing in the topic after the reply was finished")
			}
		}
	}
	if privateTyping == 0 || topicTyping == 0 {
		t.Errorf("typing actions: private %d, topic %d; want some in both", privateTyping, topicTyping)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestE2EStreamingWaitsOutFloodControl: a 429 on an edit pauses the
// topic's updates for retry_after, and the reply still ends complete.
func TestE2EStreamingWaitsOutFloodControl(t *testing.T) {
	const group, topic = int64(-100901), int64(9)
	tg, p, _, _ := startStreamingShip(t, "4242:e2e-stream-429")
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	tg.FailNext("editMessageText", 1, faketelegram.Failure{ErrorCode: 429, RetryAfter: 2})
	full := shownText(longText(1200))
	tg.Push(tg.TopicText(group, topic, 78, "bob", tg.Mention()+" write 1200"))
	shown := waitShown(ctx, t, tg, group, topic, endsWith(full))
	if len(shown) != 1 {
		t.Errorf("the topic shows %d messages, want one", len(shown))
	}
	fails := tg.Failures()
	if len(fails) != 1 {
		t.Fatalf("injected failures answered: %d, want 1", len(fails))
	}
	var after []faketelegram.Edit
	for _, e := range tg.Edits() {
		if e.At.After(fails[0].At) {
			after = append(after, e)
		}
	}
	if len(after) == 0 {
		t.Fatal("no edit after the 429")
	}
	if gap := after[0].At.Sub(fails[0].At); gap < 2*time.Second {
		t.Errorf("the next edit came %s after a 429 with retry_after 2", gap)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestE2ELongStreamedReplySplits: a 10,000-character reply written slowly
// ends as three messages, each within Telegram's limit, formatted (no
// code fences shown), every line once, in a topic and in a private chat.
func TestE2ELongStreamedReplySplits(t *testing.T) {
	const group, topic = int64(-100902), int64(3)
	tg, p, _, _ := startStreamingShip(t, "4242:e2e-stream-long")
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	full := shownText(longText(10_000))
	tg.Push(tg.TopicText(group, topic, 78, "bob", tg.Mention()+" write 10000"))
	tg.Push(tg.PrivateText(79, "cy", "write 10000"))
	complete := func(s []faketelegram.Sent) bool {
		var b strings.Builder
		for _, m := range s {
			b.WriteString(m.Text)
		}
		return len(s) == 3 && strings.HasSuffix(b.String(), full[len(full)-40:])
	}
	for _, chat := range [][2]int64{{group, topic}, {79, 0}} {
		parts := waitShown(ctx, t, tg, chat[0], chat[1], complete)
		var joined strings.Builder
		for i, m := range parts {
			if n := len([]rune(m.Text)); n > 4096 {
				t.Errorf("chat %d part %d has %d characters", chat[0], i+1, n)
			}
			fences := 0
			for _, line := range strings.Split(m.Text, "\n") {
				if strings.HasPrefix(line, "```") {
					fences++
				}
			}
			if fences%2 != 0 {
				t.Errorf("chat %d part %d has unbalanced code fences", chat[0], i+1)
			}
			joined.WriteString(m.Text + "\n")
		}
		for _, line := range strings.Split(full, "\n") {
			if strings.HasPrefix(line, "line ") && strings.Count(joined.String(), line+"\n") != 1 {
				t.Errorf("chat %d: %q appears %d times, want once", chat[0], line, strings.Count(joined.String(), line+"\n"))
				break
			}
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// TestE2EKilledMidStreamEndsWithOneReply: ship is killed with SIGKILL while
// a reply is being written into a topic and a private chat; after the
// restart each chat shows exactly one complete reply, the topic's in the
// message the first attempt had begun.
func TestE2EKilledMidStreamEndsWithOneReply(t *testing.T) {
	const group, topic = int64(-100903), int64(4)
	tg, p, dir, env := startStreamingShip(t, "4242:e2e-stream-kill")
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	full := shownText(longText(3000))
	tg.Push(tg.TopicText(group, topic, 78, "bob", tg.Mention()+" write 3000 slowly"))
	tg.Push(tg.PrivateText(80, "di", "write 3000 slowly"))
	// Mid-stream: the topic's message has been edited (so the journal holds
	// its id: the edit comes after the send's id was recorded), the private
	// chat has a draft.
	if err := tg.Wait(ctx, func() bool {
		s := shownIn(tg, group, topic)
		if len(s) == 0 || s[0].Text == full {
			return false
		}
		m, _ := tg.Message(group, s[0].MessageID)
		drafted := false
		for _, d := range tg.Drafts() {
			drafted = drafted || d.ChatID == 80
		}
		return m.Edits >= 1 && drafted
	}); err != nil {
		t.Fatalf("waiting for the replies to be half written: %v", err)
	}
	first := shownIn(tg, group, topic)[0].MessageID
	p.stop(t, syscall.SIGKILL)

	p = startShip(t, dir, env)
	inTopic := waitShown(ctx, t, tg, group, topic, endsWith(full))
	private := waitShown(ctx, t, tg, 80, 0, endsWith(full))
	if len(inTopic) != 1 || inTopic[0].MessageID != first {
		t.Errorf("the topic shows %+v; want one message, the first attempt's (%d), complete", inTopic, first)
	}
	if len(private) != 1 {
		t.Errorf("the private chat shows %d messages, want one", len(private))
	}
	sends := 0
	for _, s := range tg.Sent() {
		if s.ChatID == group || s.ChatID == 80 {
			sends++
		}
	}
	if sends != 2 {
		t.Errorf("%d messages were sent to the two chats, want 2 (one each)", sends)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// lengths lists the length of each text, for the log.
func lengths[T any](xs []T, text func(T) string) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(" → ")
		}
		fmt.Fprint(&b, len(text(x)))
	}
	return b.String()
}
