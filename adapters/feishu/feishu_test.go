package feishu_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
)

func TestP2PMessageIsAnswered(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.lk.P2PText("oc_p2p", "ou_ann", "hello bot")
	e.push(ev)
	s := e.waitSent(1)[0]
	if s.Path != fakelark.PathCreate || s.ChatID != "oc_p2p" || s.ReceiveIDType != "chat_id" ||
		s.Text != "echo: hello bot" || s.MsgType != "interactive" || s.UUID == "" {
		t.Fatalf("sent %+v, want a new card in the chat", s)
	}
	e.idle()
	es := e.entries("feishu:chat:oc_p2p")
	if len(es) != 2 || es[0].Role != chat.RoleUser || es[0].UserID != "ou_ann" || es[0].MessageID != ev.MessageID ||
		es[0].Meta["eventId"] != ev.EventID || es[1].Role != chat.RoleAssistant || es[1].Text != "echo: hello bot" {
		t.Errorf("chat log = %+v", es)
	}
}

func TestGroupAnswersOnlyWhenMentioned(t *testing.T) {
	e := newEnv(t, setup{})
	bob := fakelark.Mention{Key: "@_user_2", OpenID: "ou_bob", Name: "Bob"}
	e.push(e.lk.GroupText("oc_g", "ou_ann", "@_user_1 did you see this?", fakelark.Mention{Key: "@_user_1", OpenID: "ou_bob", Name: "Bob"}))
	trigger := e.lk.GroupText("oc_g", "ou_ann", "@_user_1 what does @_user_2 mean?", e.lk.BotMention("@_user_1"), bob)
	e.push(trigger)
	s := e.waitSent(1)[0]
	if s.Path != fakelark.PathReply || s.ReplyTo != trigger.MessageID || s.ChatID != "oc_g" || s.ReplyInThread || s.ThreadID != "" {
		t.Fatalf("sent %+v, want a reply to the trigger", s)
	}
	// The bot's own mention is gone; others read as names.
	if s.Text != "echo: what does @Bob mean?" {
		t.Errorf("reply %q", s.Text)
	}
	e.idle()
	if n := e.model.RequestCount(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	es := e.entries("feishu:chat:oc_g")
	if len(es) != 3 || es[0].Text != "@Bob did you see this?" || es[1].Text != "what does @Bob mean?" {
		t.Errorf("chat log = %+v: both messages logged, only one answered", es)
	}
	if len(e.lk.Sent()) != 1 {
		t.Errorf("%d messages sent, want 1", len(e.lk.Sent()))
	}
}

func TestThreadReplyLandsInTheThread(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.GroupText("oc_g", "ou_ann", "@_user_1 main chat question", e.lk.BotMention("@_user_1")))
	e.waitSent(1)
	inThread := e.lk.GroupText("oc_g", "ou_ann", "@_user_1 thread question", e.lk.BotMention("@_user_1")).InThread("omt_7", "om_root")
	e.push(inThread)
	s := e.waitSent(2)[1]
	if s.ReplyTo != inThread.MessageID || !s.ReplyInThread || s.ThreadID != "omt_7" || s.Text != "echo: thread question" {
		t.Fatalf("sent %+v, want a reply in thread omt_7", s)
	}
	e.idle()
	// The thread is a conversation of its own.
	th := e.entries("feishu:chat:oc_g:thread:omt_7")
	if len(th) != 2 || th[0].ChatID != "oc_g" || th[0].Meta["threadId"] != "omt_7" {
		t.Errorf("thread log = %+v", th)
	}
	if prompt := e.model.Requests()[1]; strings.Contains(messagesText(prompt.Messages), "main chat question") {
		t.Error("the thread's prompt holds the main chat's history")
	}
}

func TestSameEventTwiceIsAnsweredOnceEvenAfterRestart(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, setup{dir: dir})
	ev := e.lk.P2PText("oc_d", "ou_ann", "only once please")
	e.push(ev)
	e.push(ev) // Feishu re-pushes when an ack is slow
	e.waitSent(1)
	e.idle()
	if n := len(e.lk.Sent()); n != 1 {
		t.Fatalf("%d replies to one event", n)
	}
	group := e.lk.GroupText("oc_g", "ou_ann", "chatter", fakelark.Mention{Key: "@_user_1", OpenID: "ou_bob", Name: "Bob"})
	e.push(group)
	e.shutdown()

	// The next process gets the same events again.
	e2 := newEnv(t, setup{dir: dir, lk: e.lk})
	e2.push(ev)
	e2.push(group)
	e2.push(e.lk.P2PText("oc_d", "ou_ann", "new question"))
	if got := e2.waitSent(2)[1].Text; got != "echo: new question" {
		t.Fatalf("after restart the bot sent %q", got)
	}
	e2.idle()
	if n := len(e.lk.Sent()); n != 2 || e.model.RequestCount()+e2.model.RequestCount() != 2 {
		t.Errorf("%d replies, %d+%d model calls: a re-pushed event ran again", n, e.model.RequestCount(), e2.model.RequestCount())
	}
	if n := len(e2.entries("feishu:chat:oc_g")); n != 1 {
		t.Errorf("the re-pushed group message was logged %d times", n)
	}
}

func TestApproveInAGroupReachesTheCoreWithItsCode(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.GroupText("oc_g", "ou_ann", "@_user_1 /approve 7kq2mx", e.lk.BotMention("@_user_1")))
	if got := e.waitSent(1)[0].Text; !strings.Contains(got, "no approval with code 7KQ2MX") {
		t.Errorf("/approve answered %q", got)
	}
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("/approve reached the model: %d calls", n)
	}
}

func TestHelpIsAnsweredWithoutTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.P2PText("oc_h", "ou_ann", "/help"))
	if got := e.waitSent(1)[0].Text; !strings.Contains(got, "/clear") {
		t.Errorf("/help answered %q", got)
	}
	e.push(e.lk.GroupText("oc_g", "ou_ann", "@_user_1 /status", e.lk.BotMention("@_user_1")))
	s := e.waitSent(2)[1]
	if !strings.Contains(s.Text, "fake/m") || s.ReplyTo == "" {
		t.Errorf("/status answered %+v", s)
	}
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("commands reached the model: %d calls", n)
	}
}

func TestPostReachesTheModelAsPlainText(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.lk.Post("oc_g", "group", "ou_ann", "Release notes", [][]fakelark.PostElem{
		{fakelark.PostAt("@_user_1", "ship"), fakelark.PostText(" please read "), fakelark.PostLink("the doc", "https://example.com/d")},
		{fakelark.PostText("and ask "), fakelark.PostAt("@_user_2", "Bob"), fakelark.PostImage("img_1")},
	}, e.lk.BotMention("@_user_1"), fakelark.Mention{Key: "@_user_2", OpenID: "ou_bob", Name: "Bob"})
	e.lk.AddResource(ev.MessageID, "img_1", "image", "img_1.png", "image/png", pngBytes)
	e.push(ev)
	e.waitSent(1)
	want := "\nRelease notes\nplease read the doc (https://example.com/d)\nand ask @Bob[image]"
	if got := e.model.Requests()[0].LastUser(); !strings.HasPrefix(got, "[image 1 of the post, ") || !strings.HasSuffix(got, want) {
		t.Errorf("model saw %q, want the image described, then %q", got, want)
	}
}

func TestImageThatCannotBeDownloadedIsDescribed(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.Image("oc_i", "p2p", "ou_ann", "img_v3_1")) // the fake has no such resource
	if got := e.waitSent(1)[0].Text; got != "echo: [image: download failed]" {
		t.Errorf("reply %q", got)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.adapter.Run(ctx) }()
	if err := e.lk.WaitConnected(e.ctx()); err != nil {
		t.Fatal(err)
	}
	e.waitRunning()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	case <-e.ctx().Done():
		t.Fatal("Run did not return after cancel")
	}
	if st := e.adapter.Status(); st.State != "stopped" {
		t.Errorf("status %+v", st)
	}
}

func TestWebsocketReconnectsAfterADrop(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.P2PText("oc_r", "ou_ann", "before the drop"))
	e.waitSent(1)
	e.lk.Disconnect()
	e.push(e.lk.P2PText("oc_r", "ou_ann", "after the drop"))
	if got := e.waitSent(2)[1].Text; got != "echo: after the drop" {
		t.Fatalf("reply after reconnecting %q", got)
	}
	if n := e.lk.Connections(); n < 2 {
		t.Errorf("%d websocket connections, want a reconnect", n)
	}
}

func TestBusyNoteWhenAMessageWaits(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var once sync.Once
	e := newEnv(t, setup{
		model: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) == 0 && r.LastUser() == "slow question" {
				once.Do(func() { started <- struct{}{} })
				<-release
			}
			return fakeopenai.EchoChatSend(r)
		},
		opts: func(o *feishu.Options) { o.BusyNote, o.BusyAfter = true, time.Millisecond },
	})
	e.push(e.lk.P2PText("oc_1", "ou_ann", "slow question"))
	<-started
	e.push(e.lk.P2PText("oc_2", "ou_bob", "my turn?"))
	note := e.waitSent(1)[0]
	if note.ChatID != "oc_2" || !strings.Contains(note.Text, "#1 in line") {
		t.Fatalf("first message sent: %+v, want a busy note to oc_2", note)
	}
	close(release)
	sent := e.waitSent(3)
	if sent[1].Text != "echo: slow question" || sent[2].Text != "echo: my turn?" {
		t.Errorf("answers: %q, %q", sent[1].Text, sent[2].Text)
	}
	if sent[0].UUID == sent[2].UUID {
		t.Error("the note and the reply to one message share a uuid: Feishu would drop the reply")
	}
}

func messagesText(ms []fakeopenai.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Role + ":" + m.Content + "\n")
	}
	return b.String()
}
