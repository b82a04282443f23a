package feishu_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// A question goes as a card: the text rendered, one button per choice,
// each calling back with its command; a press by a user runs the command
// as that user, in the card's thread, and the reply is the toast the
// presser sees.
func TestButtonPressRunsTheCommandAsThePresser(t *testing.T) {
	e := newEnv(t, setup{})
	e.waitRunning()
	ev := e.lk.GroupText("oc_b", "ou_ann", "@_user_1 hm", e.lk.BotMention("@_user_1")).InThread("omt_5", "om_root")
	req := trigger(e, ev)
	err := e.adapter.SendButtons(e.ctx(), req, "Forget **everything**?", []dispatch.Button{
		{Text: "Forget", Data: "/clear"}, {Text: "Keep", Data: "/status"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := e.lk.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages", len(sent))
	}
	card := sent[0]
	r := card.Rendered
	if card.MsgType != "interactive" || card.ThreadID != "omt_5" || r.Text != "Forget everything?" || !slices.Equal(r.Bold, []string{"everything"}) {
		t.Errorf("card %s in thread %q, want the question in bold in omt_5", r, card.ThreadID)
	}
	if len(r.Buttons) != 2 || r.Buttons[0].Text != "Forget" || r.Buttons[1].Text != "Keep" || r.Buttons[0].Value["ship_cmd"] != "/clear" {
		t.Fatalf("buttons %+v", r.Buttons)
	}
	p, err := e.lk.PressButton(e.ctx(), card.MessageID, "ou_bob", "Forget")
	if err != nil {
		t.Fatal(err)
	}
	if p.Toast == nil || !strings.Contains(p.Toast.Content, "I forgot our recent conversation") {
		t.Fatalf("toast %+v, want /clear's reply", p.Toast)
	}
	var cleared []chat.ChatLogEntryV1
	for _, en := range e.entries("feishu:chat:oc_b:thread:omt_5") {
		if en.Role == chat.RoleSystem {
			cleared = append(cleared, en)
		}
	}
	if len(cleared) != 1 || cleared[0].UserID != "ou_bob" || cleared[0].ChatID != "oc_b" {
		t.Errorf("log %+v, want /clear by ou_bob in the thread", cleared)
	}
	if n := len(e.lk.Sent()); n != 1 {
		t.Errorf("%d messages sent: the press's reply is a toast, not a message", n)
	}
	if n := e.model.RequestCount(); n != 0 {
		t.Errorf("the press reached the model: %d calls", n)
	}
}

// A press by someone outside the allowlists does nothing.
func TestButtonPressOutsideTheAllowlistDoesNothing(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *feishu.Options) { o.AllowedUserIDs = []string{"ou_ann"} }})
	e.waitRunning()
	req := trigger(e, e.lk.P2PText("oc_a", "ou_ann", "hi"))
	if err := e.adapter.SendButtons(e.ctx(), req, "Sure?", []dispatch.Button{{Text: "Yes", Data: "/clear"}, {Text: "No", Data: "/status"}}); err != nil {
		t.Fatal(err)
	}
	p, err := e.lk.PressButton(e.ctx(), e.lk.Sent()[0].MessageID, "ou_eve", "Yes")
	if err != nil {
		t.Fatal(err)
	}
	if p.Toast != nil {
		t.Errorf("toast %+v for a stranger's press", p.Toast)
	}
	if es := e.entries("feishu:chat:oc_a"); len(es) != 0 {
		t.Errorf("the stranger's press ran: %+v", es)
	}
}

// The model's Markdown arrives as a card that renders it: a heading, bold,
// a list, a link with parentheses, a table and a code block with its
// language; Feishu's own markup in the text arrives as literal text, never
// as a mention of everyone.
func TestFormattedReplyArrivesAsACard(t *testing.T) {
	reply := "## Result\n\nThe **fix** is in:\n\n- step one\n- step two\n\n" +
		"See [Go](https://en.wikipedia.org/wiki/Go_(programming_language)).\n\n" +
		"| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nif a < b && c > d {}\n```\n\n" +
		`Ping <at user_id="all"></at> and <font color='red'>red</font>`
	e := newEnv(t, setup{model: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		b, _ := json.Marshal(map[string]string{"text": reply})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
	}})
	e.push(e.lk.P2PText("oc_f", "ou_ann", "fix it"))
	s := e.waitSent(1)[0]
	r := s.Rendered
	if s.MsgType != "interactive" {
		t.Fatalf("a %s message, want a card", s.MsgType)
	}
	if !slices.Equal(r.Headings, []string{"Result"}) || !slices.Equal(r.Bold, []string{"fix"}) ||
		!slices.Equal(r.ListItems, []string{"step one", "step two"}) || len(r.Tables) != 1 || r.Tables[0] != 2 {
		t.Errorf("rendered %+v", r)
	}
	if len(r.Links) != 1 || r.Links[0].URL != "https://en.wikipedia.org/wiki/Go_%28programming_language%29" {
		t.Errorf("links %+v", r.Links)
	}
	if len(r.CodeBlocks) != 1 || r.CodeBlocks[0].Lang != "go" || r.CodeBlocks[0].Code != "if a < b && c > d {}\n" {
		t.Errorf("code blocks %+v", r.CodeBlocks)
	}
	if len(r.Mentions) != 0 || len(r.Tags) != 0 {
		t.Errorf("the model's markup took effect: mentions %v, tags %v", r.Mentions, r.Tags)
	}
	if !strings.Contains(r.Text, `Ping <at user_id="all"></at> and <font color='red'>red</font>`) {
		t.Errorf("text %q, want the markup shown as written", r.Text)
	}
}

// In webhook mode a press comes as an encrypted, signed callback to the
// webhook, and the toast is the answer's body.
func TestButtonPressOverTheWebhook(t *testing.T) {
	e := newEnv(t, setup{mode: feishu.ModeWebhook})
	e.waitRunning()
	req := trigger(e, e.lk.P2PText("oc_w", "ou_ann", "hi"))
	if err := e.adapter.SendButtons(e.ctx(), req, "Status?", []dispatch.Button{{Text: "Show", Data: "/status"}, {Text: "Skip", Data: "/help"}}); err != nil {
		t.Fatal(err)
	}
	p, err := e.lk.PressButtonWebhook(e.ctx(), e.hookURL, encryptKey, e.lk.Sent()[0].MessageID, "ou_ann", "Show")
	if err != nil {
		t.Fatal(err)
	}
	if p.Ack.Code != 200 || p.Toast == nil || !strings.Contains(p.Toast.Content, "Queue:") {
		t.Errorf("answer %d %s, toast %+v: want /status's reply", p.Ack.Code, p.Ack.Payload, p.Toast)
	}
}
