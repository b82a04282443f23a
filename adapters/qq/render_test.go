package qq_test

import (
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
)

// answerWith makes the model answer every message with md.
func answerWith(md string) fakeopenai.Handler {
	return func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Response{Content: md} }
}

const modelMarkdown = "## Plan\n\n**Step one** and `go build`:\n\n- first\n  - nested\n- ~~second~~\n\n| 名字 | n |\n|---|---|\n| 苹果 | 1 |"

func TestRepliesArriveAsPlainTextWithoutMarkers(t *testing.T) {
	e := newEnv(t, setup{model: answerWith(modelMarkdown)})
	e.qq.PushGroupAt("G1", "M1", "plan?")
	s := e.waitSent(1)[0]
	want := "Plan\n\nStep one and go build:\n\n• first\n  ◦ nested\n• second\n\n名字 | n\n---- | -\n苹果 | 1"
	if s.MsgType != 0 || s.Content != want {
		t.Fatalf("sent msg_type %d %q; want plain text\n%s", s.MsgType, s.Content, want)
	}
	e.idle()
	// The chat log keeps what the model wrote: its history stays Markdown.
	es := e.entries("qq:group:G1")
	if last := es[len(es)-1]; last.Text != modelMarkdown {
		t.Errorf("chat log has %q, want the model's Markdown", last.Text)
	}
}

func TestMarkdownModeSendsQQMarkdown(t *testing.T) {
	e := newEnv(t, setup{model: answerWith(modelMarkdown), fake: fakeqq.Options{Markdown: true},
		opts: func(o *qq.Options) { o.Markdown = true }})
	ev := e.qq.PushC2C("U1", "plan?")
	s := e.waitSent(1)[0]
	if s.MsgType != 2 || s.MsgID != ev.MessageID || s.MsgSeq != 1 {
		t.Fatalf("sent %+v; want a markdown reply (msg_type 2)", s)
	}
	// QQ's markdown has no tables: the table arrives as aligned text in a
	// code block, the rest as the model wrote it.
	want := "## Plan\n\n**Step one** and `go build`:\n\n- first\n  - nested\n- ~~second~~\n\n```\n名字 | n\n---- | -\n苹果 | 1\n```"
	if s.Markdown != want {
		t.Errorf("markdown content %q, want %q", s.Markdown, want)
	}
}

func TestMarkdownRefusedFallsBackToPlainTextOnce(t *testing.T) {
	e := newEnv(t, setup{model: answerWith("**hi** there"), opts: func(o *qq.Options) { o.Markdown = true }})
	e.qq.PushGroupAt("G1", "M1", "one")
	if s := e.waitSent(1)[0]; s.MsgType != 0 || s.Content != "hi there" {
		t.Fatalf("sent %+v; want the plain text after QQ refused markdown", s)
	}
	e.idle()
	e.qq.PushGroupAt("G1", "M1", "two")
	if s := e.waitSent(2)[1]; s.MsgType != 0 || s.Content != "hi there" {
		t.Fatalf("second reply %+v; want plain text", s)
	}
	e.idle()
	// One markdown attempt in all: QQ's refusal is remembered.
	if n := e.qq.Calls(fakeqq.GroupPath("G1")); n != 3 {
		t.Errorf("%d calls to the group endpoint, want 3 (one refused markdown, two plain replies)", n)
	}
	if n := strings.Count(e.logs.String(), "lacks QQ's Markdown permission"); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, e.logs.String())
	}
}

// QQ has no buttons here: a question is a numbered list, and a person
// answers with a number. It must reach the core as that number alone.
func TestALoneNumberReachesTheCoreAsText(t *testing.T) {
	e := newEnv(t, setup{})
	e.qq.PushGroupAt("G1", "M1", "2")
	e.waitSent(1)
	e.qq.PushC2C("U1", "3")
	e.waitSent(2)
	e.qq.PushChannelAt("GUILD1", "CH1", "U5", "4")
	e.waitSent(3)
	e.idle()
	var got []string
	for _, r := range e.model.Requests() {
		got = append(got, r.LastUser())
	}
	if strings.Join(got, ",") != "2,3,4" {
		t.Errorf("the model saw %q, want the numbers without mentions or spaces", got)
	}
}
