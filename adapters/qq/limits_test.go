package qq_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/adapters/split"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/internal/fakeclock"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/events"
)

// newClock is the one clock of a test: the fake QQ's (message timestamps,
// reply windows) and the adapter's. Advancing it replaces waiting.
func newClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
}

// withClock is a setup whose fake QQ and adapter share clock.
func withClock(clock *fakeclock.Clock, model fakeopenai.Handler, opts func(*qq.Options)) setup {
	return setup{
		fake:  fakeqq.Options{Now: clock.Now},
		model: model,
		opts: func(o *qq.Options) {
			o.Now = clock.Now
			if opts != nil {
				opts(o)
			}
		},
	}
}

// paragraphs is n paragraphs of about size runes each, with no dots: the
// fake takes "word.word" for a link.
func paragraphs(n, size int) string {
	var ps []string
	for i := range n {
		p := fmt.Sprintf("Paragraph %d:", i+1)
		for utf8.RuneCountInString(p) < size {
			p += " lorem ipsum dolor sit amet"
		}
		ps = append(ps, p)
	}
	return strings.Join(ps, "\n\n")
}

// subscribe follows the run events of chatKey from now on.
func (e *env) subscribe(chatKey string) *events.Subscription {
	sub, _ := e.engine.Subscribe(func(ev events.Event) bool { return ev.ChatKey == chatKey }, 0, 1024)
	e.t.Cleanup(sub.Close)
	return sub
}

// run collects the events of one run, up to the one that ends it
// (task_completed or error), which comes last.
func (e *env) run(sub *events.Subscription) []events.Event {
	e.t.Helper()
	return adaptertest.RunEvents(e.t, sub)
}

// chatSendResults are the results of a run's chat_send calls, as the model
// got them: the tool's JSON on success, "error: …" on failure.
func chatSendResults(evs []events.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type != events.TypeAbilityResponse || ev.AbilityID != "chat_send" || ev.Result == nil {
			continue
		}
		if ev.Result.Type == "success" {
			out = append(out, ev.Result.Result)
		} else {
			out = append(out, "error: "+ev.Result.Error)
		}
	}
	return out
}

func TestLinksAreMadeNonClickableWhenQQRefusesThem(t *testing.T) {
	const text = "Docs: https://example.com/guide or run 1.sh"
	const want = "Docs: hxxps://example[.]com/guide or run 1[.]sh"
	for _, c := range []struct {
		name, key string
		code      int
		push      func(s *fakeqq.Server, text string)
	}{
		{"group", "qq:group:G5", fakeqq.CodeURLRefused, func(s *fakeqq.Server, text string) { s.PushGroupAt("G5", "M5", text) }},
		{"channel", "qq:channel:CH5", fakeqq.CodeGuildURL, func(s *fakeqq.Server, text string) { s.PushChannelAt("GU5", "CH5", "U5", text) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, setup{model: chatSends(text)})
			sub := e.subscribe(c.key)
			c.push(e.qq, "where are the docs?")
			evs := e.run(sub)
			if rej := e.qq.Rejected(); len(rej) != 1 || rej[0].Code != c.code || rej[0].Content != text {
				t.Fatalf("refused %+v, want the text with links refused once with %d", rej, c.code)
			}
			sent := e.qq.Sent()
			if len(sent) != 1 || sent[0].Content != want {
				t.Fatalf("sent %+v, want %q", sent, want)
			}
			res := chatSendResults(evs)
			if len(res) != 1 || !strings.Contains(res[0], `"success":true`) || !strings.Contains(res[0], "links were altered") {
				t.Errorf("chat_send told the model %q, want delivered with a notice that links were altered", res)
			}
			var logged []string
			for _, en := range e.entries(c.key) {
				if en.Role == chat.RoleAssistant {
					logged = append(logged, en.Text)
				}
			}
			if len(logged) != 1 || logged[0] != want {
				t.Errorf("chat log has the replies %q, want what the user got", logged)
			}
			// The next turn's model call carries that result in its history.
			c.push(e.qq, "thanks")
			e.run(sub)
			told := false
			for _, m := range e.model.Requests()[1].Messages {
				told = told || (m.Role == "tool" && strings.Contains(m.Content, "links were altered"))
			}
			if !told {
				t.Error("the model's history does not say that links were altered")
			}
		})
	}
}

func TestGroupReplyAfterTheWindowIsRefusedAndReported(t *testing.T) {
	for _, c := range []struct {
		name    string
		advance func(*fakeclock.Clock, *fakeqq.Server)
	}{
		// The adapter knows the window has passed and does not even try.
		{"both clocks", func(c *fakeclock.Clock, _ *fakeqq.Server) { c.Advance(fakeqq.GroupReplyWindow + time.Second) }},
		// Only QQ knows (say after a restart): its refusal is reported the same way.
		{"QQ's clock only", func(_ *fakeclock.Clock, s *fakeqq.Server) { s.Advance(fakeqq.GroupReplyWindow + time.Second) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newClock()
			var e *env
			e = newEnv(t, withClock(clock, func(r fakeopenai.Request) fakeopenai.Response {
				if len(r.ToolResults()) == 0 {
					c.advance(clock, e.qq) // the model took its time
				}
				return fakeopenai.EchoChatSend(r)
			}, nil))
			sub := e.subscribe("qq:group:G6")
			ev := e.qq.PushGroupAt("G6", "M6", "slow answer please")
			evs := e.run(sub)
			if fin := evs[len(evs)-1]; fin.Type != events.TypeError || fin.ErrorCode != "REPLY_WINDOW_CLOSED" || !strings.Contains(fin.ErrorMessage, "reply window") {
				t.Errorf("run ended with %+v, want an error event REPLY_WINDOW_CLOSED", fin)
			}
			if n := len(e.qq.Sent()); n != 0 {
				t.Errorf("%d messages delivered after the window", n)
			}
			if res := chatSendResults(evs); len(res) != 1 || !strings.HasPrefix(res[0], "error: ") || !strings.Contains(res[0], "reply window") {
				t.Errorf("chat_send told the model %q, want a failure naming the reply window", res)
			}
			var system []chat.ChatLogEntryV1
			for _, en := range e.entries("qq:group:G6") {
				if en.Role == chat.RoleSystem {
					system = append(system, en)
				}
			}
			if len(system) != 1 || !strings.Contains(system[0].Text, "reply window") || system[0].Meta["replyTo"] != ev.MessageID {
				t.Errorf("chat log system entries %+v, want one saying the reply window closed", system)
			}
			if l := e.logs.String(); !strings.Contains(l, "reply not delivered") || !strings.Contains(l, "reply window") {
				t.Error("the refused reply is not in the log")
			}
		})
	}
}

func TestSixPartAnswerIsPackedIntoFiveReplies(t *testing.T) {
	long := paragraphs(6, 1100)
	if n := len(split.Split(long, qq.MaxMessageChars)); n != 6 {
		t.Fatalf("the answer splits into %d parts, want 6", n)
	}
	e := newEnv(t, setup{model: chatSends(long)})
	sub := e.subscribe("qq:group:G7")
	ev := e.qq.PushGroupAt("G7", "M7", "tell me everything")
	evs := e.run(sub)
	if rej := e.qq.Rejected(); len(rej) != 0 {
		t.Errorf("QQ refused %d replies, first %+v", len(rej), rej[0])
	}
	sent := e.qq.Sent()
	if len(sent) == 0 || len(sent) > fakeqq.MaxReplies {
		t.Fatalf("%d replies to one message, want 1 to %d", len(sent), fakeqq.MaxReplies)
	}
	var got strings.Builder
	for _, s := range sent {
		if s.MsgID != ev.MessageID || utf8.RuneCountInString(s.Content) > qq.MaxMessageChars {
			t.Errorf("reply %+v", s)
		}
		got.WriteString(s.Content + " ")
	}
	if strings.Join(strings.Fields(got.String()), " ") != strings.Join(strings.Fields(long), " ") {
		t.Error("the replies do not carry the whole answer")
	}
	if res := chatSendResults(evs); len(res) != 1 || !strings.Contains(res[0], `"success":true`) {
		t.Errorf("chat_send told the model %q", res)
	}
}

func TestBusyNoteLeavesTheAnswerItsReplies(t *testing.T) {
	answer := paragraphs(5, 1100)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	e := newEnv(t, setup{
		model: func(r fakeopenai.Request) fakeopenai.Response {
			if len(r.ToolResults()) > 0 {
				return fakeopenai.Response{}
			}
			if r.LastUser() == "slow question" {
				started <- struct{}{}
				<-release
			}
			b, _ := json.Marshal(map[string]string{"text": answer})
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(b)}}}
		},
		opts: func(o *qq.Options) { o.BusyNote, o.BusyAfter = true, time.Millisecond },
	})
	sub := e.subscribe("qq:c2c:U8")
	e.qq.PushC2C("U7", "slow question")
	<-started
	ev := e.qq.PushC2C("U8", "my turn?")
	if note := e.waitSent(1)[0]; note.Target != "U8" || !strings.Contains(note.Content, "#1 in line") || note.MsgID != ev.MessageID {
		t.Fatalf("first message sent: %+v, want a busy note to U8", note)
	}
	close(release)
	evs := e.run(sub)
	if rej := e.qq.Rejected(); len(rej) != 0 {
		t.Errorf("QQ refused %d replies, first %+v", len(rej), rej[0])
	}
	if res := chatSendResults(evs); len(res) != 1 || !strings.Contains(res[0], `"success":true`) {
		t.Errorf("chat_send told the model %q, want the answer delivered after the note", res)
	}
	var toU8 int
	for _, s := range e.qq.Sent() {
		if s.MsgID == ev.MessageID {
			toU8++
		}
	}
	if toU8 < 2 || toU8 > fakeqq.MaxReplies {
		t.Errorf("%d replies to U8's message, want the note and the answer in at most %d", toU8, fakeqq.MaxReplies)
	}
}

func TestSixthReplyIsRefusedAndReported(t *testing.T) {
	var texts []string
	for i := range fakeqq.MaxReplies + 1 {
		texts = append(texts, fmt.Sprintf("reply number %d", i+1))
	}
	e := newEnv(t, setup{model: chatSends(texts...)})
	sub := e.subscribe("qq:c2c:U9")
	e.qq.PushC2C("U9", "six replies please")
	evs := e.run(sub)
	if fin := evs[len(evs)-1]; fin.Type != events.TypeError || fin.ErrorCode != "REPLY_LIMIT_REACHED" {
		t.Errorf("run ended with %+v, want an error event REPLY_LIMIT_REACHED", fin)
	}
	if n := len(e.qq.Sent()); n != fakeqq.MaxReplies {
		t.Errorf("%d replies delivered, want %d", n, fakeqq.MaxReplies)
	}
	res := chatSendResults(evs)
	if len(res) != 6 || !strings.HasPrefix(res[5], "error: ") || !strings.Contains(res[5], "at most 5 replies") {
		t.Errorf("chat_send results %q, want the sixth to fail naming QQ's limit", res)
	}
	var system int
	for _, en := range e.entries("qq:c2c:U9") {
		if en.Role == chat.RoleSystem && strings.Contains(en.Text, "at most 5 replies") {
			system++
		}
	}
	if system != 1 {
		t.Errorf("%d system entries about the refused reply, want 1", system)
	}
}
