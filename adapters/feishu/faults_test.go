package feishu_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
)

// noTyping refuses the next run's Typing reaction before its token is
// looked at (a missing permission), so that the reply is the only call that
// meets the expired token: the typing call, running beside it, would
// otherwise fetch the new token first, or fetch one of its own.
func noTyping(e *env) {
	e.lk.FailNext(fakelark.PathReactionCreate, 1, 231002, "no permission to react")
}

// A peer lost every reply two hours after start: the SDK kept sending an
// expired token. Here the token expires between two messages.
func TestExpiredTokenIsRefreshedAndTheReplyStillArrives(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.P2PText("oc_t", "ou_ann", "before"))
	e.waitSent(1)
	issued := e.lk.TokensIssued()
	e.lk.ExpireTokens()
	noTyping(e)
	e.push(e.lk.P2PText("oc_t", "ou_ann", "after"))
	if got := e.waitSent(2)[1].Text; got != "echo: after" {
		t.Fatalf("reply after expiry %q", got)
	}
	if n := e.lk.TokensIssued(); n != issued+1 {
		t.Errorf("%d tokens issued, want one new token", n)
	}
	// The next reply uses the new token without another refusal.
	calls := e.lk.Calls(fakelark.PathCreate)
	e.push(e.lk.P2PText("oc_t", "ou_ann", "again"))
	e.waitSent(3)
	if n := e.lk.Calls(fakelark.PathCreate); n != calls+1 {
		t.Errorf("%d create calls for one reply", n-calls)
	}
}

// 99991668 is another "invalid access token" answer, and the SDK does not
// retry it by itself: the adapter drops the cached token, fetches a new one
// and sends again, once.
func TestRevokedTokenAnswered99991668IsRefreshedAndTheReplyStillArrives(t *testing.T) {
	e := newEnv(t, setup{})
	e.push(e.lk.P2PText("oc_v", "ou_ann", "before"))
	e.waitSent(1)
	issued, calls := e.lk.TokensIssued(), e.lk.Calls(fakelark.PathCreate)
	e.lk.RevokeTokens()
	noTyping(e)
	e.push(e.lk.P2PText("oc_v", "ou_ann", "after"))
	e.idle() // the message is queued before the ack
	if sent := e.lk.Sent(); len(sent) != 2 || sent[1].Text != "echo: after" {
		t.Fatalf("sent %+v, want the reply after the revocation", sent)
	}
	if n := e.lk.TokensIssued(); n != issued+1 {
		t.Errorf("%d tokens issued, want one new token", n-issued)
	}
	if n := e.lk.Calls(fakelark.PathCreate); n != calls+2 {
		t.Errorf("%d create calls, want 2 (the refusal and the retry)", n-calls)
	}
	for _, en := range e.entries("feishu:chat:oc_v") {
		if en.Role == chat.RoleAssistant && en.Text != "echo: before" && en.Text != "echo: after" {
			t.Errorf("unexpected reply logged: %q", en.Text)
		}
	}
}

func TestSendFailureIsReportedToTheModel(t *testing.T) {
	e := newEnv(t, setup{})
	e.lk.FailNext(fakelark.PathReply, 1, 230002, "Bot/User can NOT be out of the chat.")
	e.push(e.lk.GroupText("oc_f", "ou_ann", "@_user_1 hi", e.lk.BotMention("@_user_1")))
	e.waitModelCalls(2)
	if n := e.lk.Calls(fakelark.PathReply); n != 1 {
		t.Errorf("reply called %d times, want 1: the refusal is final", n)
	}
	for _, en := range e.entries("feishu:chat:oc_f") {
		if en.Role == chat.RoleAssistant {
			t.Errorf("a refused reply is logged as delivered: %q", en.Text)
		}
	}
	res := e.model.Requests()[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Content, `"success":false`) || !strings.Contains(res[0].Content, "230002") {
		t.Errorf("chat_send told the model %+v, want the truth", res)
	}
}

func TestRateLimitIsRetried(t *testing.T) {
	e := newEnv(t, setup{})
	e.lk.FailNext(fakelark.PathCreate, 1, fakelark.CodeRateLimit, "request trigger frequency limit")
	e.lk.FailNext(fakelark.PathCreate, 1, fakelark.CodeChatRate, "The message sending rate in this chat exceeds the limit.")
	e.push(e.lk.P2PText("oc_r", "ou_ann", "hi"))
	if s := e.waitSent(1)[0]; s.Text != "echo: hi" {
		t.Fatalf("sent %+v", s)
	}
	if n := e.lk.Calls(fakelark.PathCreate); n != 3 {
		t.Errorf("create called %d times, want 2 refusals + 1 success", n)
	}
}

// A send that went through but whose answer was lost is retried with the
// same uuid, and Feishu does not post it twice.
func TestLostAnswerIsRetriedWithoutADuplicate(t *testing.T) {
	e := newEnv(t, setup{})
	e.lk.FailNextWith(fakelark.PathCreate, 1, fakelark.Failure{Status: http.StatusBadGateway, Code: 502, Msg: "Bad Gateway", Lost: true})
	e.push(e.lk.P2PText("oc_l", "ou_ann", "hi"))
	e.waitSent(1)
	e.idle()
	if n, calls := len(e.lk.Sent()), e.lk.Calls(fakelark.PathCreate); n != 1 || calls != 2 {
		t.Errorf("%d messages from %d calls; want 1 from 2", n, calls)
	}
	// The reply counts as delivered (logged), and the run did not resend it.
	es := e.entries("feishu:chat:oc_l")
	if len(es) != 2 || es[1].Role != chat.RoleAssistant || e.model.RequestCount() != 1 {
		t.Errorf("chat log %+v after %d model calls", es, e.model.RequestCount())
	}
}

// A reply over one card's 30 KB goes as several cards, cut between
// paragraphs, each with a uuid of its own, nothing lost.
func TestLongReplyIsSplit(t *testing.T) {
	var long strings.Builder
	for i := 0; long.Len() < 40_000; i++ {
		fmt.Fprintf(&long, "Paragraph %d of a long answer, with some words to fill it.\n\n", i)
	}
	reply := strings.TrimSpace(long.String())
	want := len(markdown.Feishu(reply))
	if want < 2 {
		t.Fatalf("the reply renders to %d cards", want)
	}
	e := newEnv(t, setup{model: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		b, _ := json.Marshal(map[string]string{"text": reply})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
	}})
	e.push(e.lk.P2PText("oc_s", "ou_ann", "tell me everything"))
	sent := e.waitSent(want)
	e.idle()
	uuids := map[string]bool{}
	var joined []string
	for i, s := range e.lk.Sent() {
		if n := len(s.Content); n > fakelark.MaxCardBytes || s.MsgType != "interactive" {
			t.Errorf("part %d: a %s of %d bytes", i, s.MsgType, n)
		}
		uuids[s.UUID] = true
		joined = append(joined, s.Text)
	}
	if len(e.lk.Sent()) != want || len(uuids) != want {
		t.Errorf("%d parts with %d distinct uuids, want %d and %d", len(sent), len(uuids), want, want)
	}
	if strings.Join(joined, "\n") != strings.ReplaceAll(reply, "\n\n", "\n") {
		t.Error("the parts do not add up to the reply")
	}
}

func TestBadCredentialsStopWithAClearError(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: func(o *feishu.Options) { o.AppSecret = "wrong-secret-value" }})
	err := e.adapter.Run(e.ctx())
	if err == nil || !strings.Contains(err.Error(), "FEISHU_APP_SECRET") || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("err = %v", err)
	}
	if st := e.adapter.Status(); st.State != "failed" || strings.Contains(st.Detail, "wrong-secret-value") {
		t.Errorf("status %+v", st)
	}
	if strings.Contains(e.logs.String(), "wrong-secret-value") {
		t.Error("the secret appears in the logs")
	}
}
