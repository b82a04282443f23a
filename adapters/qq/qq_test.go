package qq_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
)

// chatSends answers every user message with one chat_send per text.
func chatSends(texts ...string) fakeopenai.Handler {
	return func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		var calls []fakeopenai.ToolCall
		for _, text := range texts {
			b, _ := json.Marshal(map[string]string{"text": text})
			calls = append(calls, fakeopenai.ToolCall{Name: "chat_send", Arguments: string(b)})
		}
		return fakeopenai.Response{ToolCalls: calls}
	}
}

func TestGroupAtIsAnsweredAtTheGroupEndpoint(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G1", "M7", "hello bot")
	s := e.waitSent(1)[0]
	if s.Path != fakeqq.GroupPath("G1") || s.Content != "echo: hello bot" || s.MsgID != ev.MessageID || s.MsgSeq != 1 || s.MsgType != 0 {
		t.Fatalf("sent %+v; want a text reply (msg_type 0) to %s with msg_seq 1 at %s", s, ev.MessageID, fakeqq.GroupPath("G1"))
	}
	if last := e.model.Requests()[0].LastUser(); last != "hello bot" {
		t.Errorf("model saw %q", last)
	}
	e.idle()
	es := e.entries("qq:group:G1")
	if len(es) != 2 || es[0].Role != chat.RoleUser || es[0].MessageID != ev.MessageID || es[0].UserID != "M7" ||
		es[0].ChatID != "G1" || es[1].Role != chat.RoleAssistant || es[1].Text != "echo: hello bot" {
		t.Errorf("chat log = %+v", es)
	}
}

func TestC2CIsAnsweredAtTheUserEndpoint(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushC2C("U1", "hi there")
	s := e.waitSent(1)[0]
	if s.Path != fakeqq.C2CPath("U1") || s.Content != "echo: hi there" || s.MsgID != ev.MessageID || s.MsgSeq != 1 || s.MsgType != 0 {
		t.Fatalf("sent %+v", s)
	}
	e.idle()
	if got := e.userTexts("qq:c2c:U1"); len(got) != 1 || got[0] != "hi there" {
		t.Errorf("chat log user texts %q", got)
	}
}

func TestChannelAtIsAnsweredWithoutTheMention(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushChannelAt("GUILD1", "CH1", "U5", "what is 2+2?")
	if !strings.HasPrefix(ev.Data["content"].(string), "<@!") {
		t.Fatalf("the fake sent %q, want a leading mention", ev.Data["content"])
	}
	s := e.waitSent(1)[0]
	if s.Path != fakeqq.ChannelPath("CH1") || s.MsgID != ev.MessageID || s.Content != "echo: what is 2+2?" {
		t.Fatalf("sent %+v", s)
	}
	if last := e.model.Requests()[0].LastUser(); last != "what is 2+2?" {
		t.Errorf("model saw %q, want the text without the mention", last)
	}
	e.idle()
	if got := e.userTexts("qq:channel:CH1"); len(got) != 1 || strings.Contains(got[0], "<@") {
		t.Errorf("chat log user texts %q", got)
	}
}

func TestGuildDirectMessageIsAnsweredInTheDM(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushDirect("DMGUILD9", "DMCH9", "U9", "a private question")
	s := e.waitSent(1)[0]
	if s.Path != fakeqq.DMPath("DMGUILD9") || s.MsgID != ev.MessageID || s.Content != "echo: a private question" {
		t.Fatalf("sent %+v", s)
	}
	e.idle()
	if got := e.userTexts("qq:dm:DMGUILD9"); len(got) != 1 {
		t.Errorf("chat log user texts %q", got)
	}
}

func TestTwoRepliesToOneMessageCarryDifferentSeqs(t *testing.T) {
	e := newEnv(t, setup{model: chatSends("first part of my answer", "second part of my answer")})
	ev := e.qq.PushGroupAt("G2", "M1", "tell me two things")
	sent := e.waitSent(2)
	if sent[0].MsgID != ev.MessageID || sent[1].MsgID != ev.MessageID {
		t.Fatalf("replies %+v do not both answer %s", sent, ev.MessageID)
	}
	if sent[0].MsgSeq == sent[1].MsgSeq || sent[0].MsgSeq == 0 || sent[1].MsgSeq == 0 {
		t.Errorf("msg_seq %d and %d: want two different, non-zero", sent[0].MsgSeq, sent[1].MsgSeq)
	}
	if n := e.qq.Calls(fakeqq.GroupPath("G2")); n != 2 {
		t.Errorf("%d calls, want 2: a reply was refused as a duplicate", n)
	}
}

func TestLongReplyIsSplitIntoPartsQQAccepts(t *testing.T) {
	long := strings.Repeat("这是一个很长的回答的一行。This line is part of a long answer.\n", 90)
	e := newEnv(t, setup{model: chatSends(long)})
	ev := e.qq.PushC2C("U2", "explain at length")
	e.waitSent(3)
	e.idle()
	sent := e.qq.Sent()
	if len(sent) < 3 {
		t.Fatalf("%d parts for %d characters", len(sent), utf8.RuneCountInString(long))
	}
	for i, s := range sent {
		if n := utf8.RuneCountInString(s.Content); n > qq.MaxMessageChars {
			t.Errorf("part %d has %d characters", i, n)
		}
		if s.MsgID != ev.MessageID || s.MsgSeq != i+1 {
			t.Errorf("part %d: msg_id %q msg_seq %d", i, s.MsgID, s.MsgSeq)
		}
	}
}

func TestHelpIsAnsweredWithoutTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushC2C("U3", "/help")
	s := e.waitSent(1)[0]
	if !strings.Contains(s.Content, "/clear") || s.MsgID != ev.MessageID || s.Path != fakeqq.C2CPath("U3") {
		t.Fatalf("/help answered %+v", s)
	}
	e.qq.PushGroupAt("G3", "M3", "/status")
	if s := e.waitSent(2)[1]; !strings.Contains(s.Content, "fake/m") {
		t.Errorf("/status answered %q", s.Content)
	}
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("commands reached the model: %d calls", n)
	}
}

func TestExpiredMsgIDIsReportedToTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	e.qq.FailNext(fakeqq.GroupPath("G4"), 1, 400, fakeqq.CodeMsgIDExpired, "请求参数msg_id无效或越权")
	e.qq.PushGroupAt("G4", "M4", "are you there?")
	e.waitModelCalls(2)
	res := e.model.Requests()[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Content, `"success":false`) || !strings.Contains(res[0].Content, "40034005") ||
		!strings.Contains(res[0].Content, "passive-reply window") {
		t.Fatalf("chat_send told the model %+v, want the truth", res)
	}
	if !strings.Contains(e.logs.String(), "40034005") {
		t.Error("the refusal is not in the log")
	}
	if n := len(e.qq.Sent()); n != 0 {
		t.Errorf("%d messages delivered", n)
	}
	for _, en := range e.entries("qq:group:G4") {
		if en.Role == chat.RoleAssistant {
			t.Errorf("a refused reply is logged as delivered: %q", en.Text)
		}
	}
}

func TestExpiredTokenIsRefreshedAndTheReplyArrives(t *testing.T) {
	e := newEnv(t, setup{})
	if err := e.qq.WaitIdentified(e.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	before := e.qq.TokenCalls()
	e.qq.FailNext(fakeqq.C2CPath("U5"), 1, 401, fakeqq.CodeTokenExpired, "token not exist or expire")
	e.qq.PushC2C("U5", "still there?")
	if s := e.waitSent(1)[0]; s.Content != "echo: still there?" {
		t.Fatalf("sent %+v", s)
	}
	if after := e.qq.TokenCalls(); after <= before {
		t.Errorf("token endpoint called %d times before and %d after the 11244: no refresh", before, after)
	}
	if n := e.qq.Calls(fakeqq.C2CPath("U5")); n != 2 {
		t.Errorf("%d calls, want the refused one and the retry", n)
	}
}

func TestTokenIsRefreshedBeforeItExpires(t *testing.T) {
	e := newEnv(t, setup{fake: fakeqq.Options{TokenLifetime: 2 * time.Second}})
	if err := e.qq.WaitTokenCalls(e.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	e.qq.PushC2C("U6", "after some refreshes")
	if s := e.waitSent(1)[0]; s.Content != "echo: after some refreshes" {
		t.Fatalf("sent %+v", s)
	}
}

func TestRunReturnsPromptlyAfterCancel(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.adapter.Run(ctx) }()
	if err := e.qq.WaitIdentified(e.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if _, _, _, intents := e.qq.Gateway(); intents != 1<<25|1<<30|1<<12 {
		t.Errorf("identified with intents %#x, want groups/C2C, guild @-messages and guild DMs", intents)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-e.ctx().Done(): // hang guard, not a timing assertion
		t.Fatal("Run did not return after its context was cancelled")
	}
	if st := e.adapter.Status(); st.State != "stopped" {
		t.Errorf("status %+v", st)
	}
}

func TestBadCredentialsStopWithAClearError(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: func(o *qq.Options) { o.AppSecret = "wrong-secret-value" }})
	err := e.adapter.Run(e.ctx())
	if err == nil || !strings.Contains(err.Error(), "QQ_APP_SECRET") || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("err = %v", err)
	}
	if st := e.adapter.Status(); st.State != "failed" || strings.Contains(st.Detail, "wrong-secret-value") {
		t.Errorf("status %+v", st)
	}
}

func TestBusyNoteWhenAMessageWaits(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	e := newEnv(t, setup{
		model: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) == 0 && r.LastUser() == "slow question" {
				started <- struct{}{}
				<-release
			}
			return fakeopenai.EchoChatSend(r)
		},
		opts: func(o *qq.Options) { o.BusyNote, o.BusyAfter = true, time.Millisecond },
	})
	e.qq.PushC2C("U7", "slow question")
	<-started
	ev := e.qq.PushC2C("U8", "my turn?")
	note := e.waitSent(1)[0]
	if note.Target != "U8" || !strings.Contains(note.Content, "#1 in line") || note.MsgID != ev.MessageID || note.MsgSeq != 1 {
		t.Fatalf("first message sent: %+v, want a busy note to U8", note)
	}
	close(release)
	sent := e.waitSent(3)
	if sent[2].Target != "U8" || sent[2].MsgSeq != 2 {
		t.Errorf("the answer after the note: %+v, want msg_seq 2", sent[2])
	}
}
