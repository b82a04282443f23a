package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/queue"
)

func call(name string, args any) fakeopenai.ToolCall {
	b, _ := json.Marshal(args)
	return fakeopenai.ToolCall{Name: name, Arguments: string(b)}
}

func TestReplyArrivesThroughChatSend(t *testing.T) {
	h := newHarness(t, harnessOptions{agentMD: "You are Ship's test bot. Be brief."})
	o := h.ask("42", "m1", "hello there")

	if o.Err != nil || !o.Result.Success {
		t.Fatalf("run failed: %+v", o)
	}
	if got := h.out.texts(""); len(got) != 1 || got[0] != "echo: hello there" {
		t.Fatalf("user saw %q, want one reply \"echo: hello there\"", got)
	}
	s := h.out.all()[0]
	if s.Req.ChatID != "42" || s.Req.MessageID != "m1" || s.Req.ChatKey != chatKeyOf("42") {
		t.Errorf("reply routed to %+v", s.Req)
	}
	if o.FallbackSent {
		t.Error("fallback sent although chat_send succeeded")
	}
	if len(o.Result.ToolCalls) != 1 || o.Result.ToolCalls[0].Tool != "chat_send" || o.Result.ToolCalls[0].Input["text"] != "echo: hello there" {
		t.Errorf("toolCalls = %+v", o.Result.ToolCalls)
	}

	// The model saw Agent.md and the runtime facts in the system prompt, the
	// user's text verbatim as the last user message, and both tools.
	req := h.fake.Requests()[0]
	sys := req.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "You are Ship's test bot.") || !strings.Contains(sys.Content, chatKeyOf("42")) {
		t.Errorf("system prompt = %q", sys.Content)
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role != "user" || last.Content != "hello there" {
		t.Errorf("last message = %+v, want the user's text verbatim", last)
	}
	if !req.HasTool("chat_send") || !req.HasTool("chat_load_history") {
		t.Errorf("tools offered: %+v", req.Tools)
	}
	// The loop stopped after the successful chat_send: one model call only.
	if n := h.fake.RequestCount(); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}

	es := h.entries(chatKeyOf("42"))
	if len(es) != 2 || es[0].Role != chat.RoleUser || es[0].Text != "hello there" || es[0].MessageID != "m1" ||
		es[1].Role != chat.RoleAssistant || es[1].Text != "echo: hello there" || es[1].Meta["via"] != dispatch.ViaChatSend {
		t.Errorf("chat log = %s", roles(es))
	}
}

func TestFallbackSendsOutputOnceWhenModelSkipsChatSend(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Response{Content: "plain answer to " + r.LastUser()}
	}})
	o := h.ask("7", "m1", "question")
	if !o.FallbackSent {
		t.Fatal("fallback did not send")
	}
	if got := h.out.texts(""); len(got) != 1 || got[0] != "plain answer to question" {
		t.Fatalf("user saw %q, want the output once", got)
	}
	es := h.entries(chatKeyOf("7"))
	if len(es) != 2 || es[1].Role != chat.RoleAssistant || es[1].Meta["via"] != dispatch.ViaFallback {
		t.Errorf("chat log = %s", roles(es))
	}
}

func TestNoFallbackWhenChatSendSucceeded(t *testing.T) {
	// The model sends its reply AND writes text in the same answer: the text
	// must not reach the user a second time.
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{Content: "I have replied."}
		}
		return fakeopenai.Response{Content: "Sending now.", ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "the reply"})}}
	}})
	o := h.ask("7", "m1", "question")
	if o.FallbackSent {
		t.Error("fallback sent although chat_send succeeded")
	}
	if got := h.out.texts(""); len(got) != 1 || got[0] != "the reply" {
		t.Fatalf("user saw %q, want only \"the reply\"", got)
	}
}

func TestEmptyOutputSendsNothing(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: func(fakeopenai.Request) fakeopenai.Response { return fakeopenai.Response{} }})
	o := h.ask("7", "m1", "question")
	if o.FallbackSent || len(h.out.all()) != 0 {
		t.Fatalf("sent %q for an empty output", h.out.texts(""))
	}
	for _, e := range h.entries(chatKeyOf("7")) {
		if e.Role == chat.RoleAssistant {
			t.Errorf("assistant entry %q logged without a reply", e.Text)
		}
	}
}

func TestFailedDeliveryIsReportedToTheModel(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.out.fail = errors.New("platform said 403: bot was kicked")
	o := h.ask("7", "m1", "question")
	if len(o.Result.ToolCalls) == 0 {
		t.Fatal("no tool call recorded")
	}
	out := o.Result.ToolCalls[0].Output
	if !strings.Contains(out, `"success":false`) || !strings.Contains(out, "bot was kicked") {
		t.Errorf("chat_send output = %s, want a truthful failure", out)
	}
	if o.Result.Delivered {
		t.Error("run claims a delivery that failed")
	}
	for _, e := range h.entries(chatKeyOf("7")) {
		if e.Role == chat.RoleAssistant {
			t.Errorf("assistant entry %q logged for a failed delivery", e.Text)
		}
	}
}

func TestHistoryInjectionOrderWithoutReinjection(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		switch n := len(r.ToolResults()); n {
		case 0:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_load_history", map[string]int{"limit": 4})}}
		case 1:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_load_history", map[string]int{"limit": 7})}}
		case 2:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_load_history", map[string]string{"keyword": "OLD-3"})}}
		default:
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "done"})}}
		}
	}})
	ctx := context.Background()
	key := chatKeyOf("9")
	// Eight older messages in the log, written before this process knew the
	// chat (so none is in memory), with increasing timestamps.
	for i := 1; i <= 8; i++ {
		role := chat.RoleUser
		if i%2 == 0 {
			role = chat.RoleAssistant
		}
		if _, err := h.store.Append(ctx, chat.ChatLogEntryV1{TS: int64(1000 * i), Channel: testChannel, ChatID: "9", ChatKey: key, Role: role, Text: fmt.Sprintf("OLD-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	engine.ForgetHistory(h.engine, key) // start with empty in-memory history
	o := h.ask("9", "m-now", "what did we discuss?")
	if !o.Result.Success {
		t.Fatalf("run failed: %+v", o)
	}

	reqs := h.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model called %d times, want 4", len(reqs))
	}
	between := func(r fakeopenai.Request) []string {
		var out []string
		for _, m := range dialogue(r) {
			if m.Role == "user" && m.Content == "what did we discuss?" {
				break
			}
			out = append(out, m.Role+":"+m.Content)
		}
		return out
	}
	want1 := "user:OLD-5 assistant:OLD-6 user:OLD-7 assistant:OLD-8"
	if got := strings.Join(between(reqs[1]), " "); got != want1 {
		t.Errorf("after limit 4, before the user message: %s\nwant %s", got, want1)
	}
	want2 := "assistant:OLD-2 user:OLD-3 assistant:OLD-4 " + want1
	if got := strings.Join(between(reqs[2]), " "); got != want2 {
		t.Errorf("after limit 7, before the user message: %s\nwant %s", got, want2)
	}
	if got := strings.Join(between(reqs[3]), " "); got != want2 {
		t.Errorf("after a keyword hit already injected: %s\nwant unchanged %s", got, want2)
	}
	// The current message appears once, last among user messages, verbatim.
	count := 0
	for _, m := range reqs[3].Messages {
		if m.Content == "what did we discuss?" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("current message appears %d times", count)
	}
	var results []map[string]any
	for _, tc := range o.Result.ToolCalls[:3] {
		var m map[string]any
		_ = json.Unmarshal([]byte(tc.Output), &m)
		results = append(results, m)
	}
	if results[0]["inserted"] != 4.0 || results[1]["inserted"] != 3.0 || results[2]["inserted"] != 0.0 || results[2]["mode"] != "search" {
		t.Errorf("tool results = %v", results)
	}
}

func TestPerChatOrderWithConcurrency4And50Chats(t *testing.T) {
	var inflight, peak atomic.Int32
	h := newHarness(t, harnessOptions{concurrency: 4, handler: func(r fakeopenai.Request) fakeopenai.Response {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return fakeopenai.EchoChatSend(r)
	}})
	const chats, perChat = 50, 6
	var wg sync.WaitGroup
	for i := 0; i < perChat; i++ {
		for c := 0; c < chats; c++ {
			done := h.send(fmt.Sprint(c), fmt.Sprintf("m%d", i), fmt.Sprintf("chat %d message %d", c, i))
			wg.Add(1)
			go func() { defer wg.Done(); <-done }()
		}
	}
	wg.Wait()
	for c := 0; c < chats; c++ {
		got := h.out.texts(chatKeyOf(fmt.Sprint(c)))
		if len(got) != perChat {
			t.Fatalf("chat %d got %d replies, want %d", c, len(got), perChat)
		}
		for i, text := range got {
			if want := fmt.Sprintf("echo: chat %d message %d", c, i); text != want {
				t.Fatalf("chat %d reply %d = %q, want %q (order broken)", c, i, text, want)
			}
		}
	}
	if peak.Load() < 2 {
		t.Logf("note: peak concurrent model calls %d", peak.Load())
	}
}

func TestQueueFullIsATypedErrorAndTheMessageIsKept(t *testing.T) {
	release, started, handler := heldModel()
	h := newHarness(t, harnessOptions{capacity: 1, handler: handler})
	first := h.send("1", "a", "first")
	<-started // the first is running; the queue now holds one waiting item at most
	second := h.send("1", "b", "second")
	_, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel, ChatKey: chatKeyOf("1"),
		Message: ingress.IncomingChatMessage{ChatID: "1", MessageID: "c", Text: "third"},
		// A platform's message: kept in the log with its refusal.
		KeepRefused: true,
	})
	var full *queue.QueueFullError
	if !errors.Is(err, queue.ErrQueueFull) || !errors.As(err, &full) || !ingress.IsBusy(err) {
		t.Fatalf("third message: err = %v, want a queue-full error", err)
	}
	close(release)
	<-first
	<-second
	if got := h.out.texts(""); len(got) != 2 {
		t.Errorf("replies %q, want 2", got)
	}
	// The refused message is on record, marked as not answered.
	es := h.entries(chatKeyOf("1"))
	var third, refused bool
	for _, e := range es {
		third = third || (e.Role == chat.RoleUser && e.Text == "third")
		refused = refused || (e.Role == chat.RoleSystem && e.MessageID == "c" && strings.Contains(e.Text, "queue full"))
	}
	if !third || !refused {
		t.Errorf("chat log = %s", roles(es))
	}
}

func TestTornLogLineIsSurvived(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir})
	h.ask("5", "m1", "before the crash")
	h.close()

	// A crash in the middle of a write leaves half a line behind.
	path := filepath.Join(dir, ".ship", "chats", "telegram_chat_5.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"v":1,"ts":17,"channel":"telegram","chatId":"5","chatKe`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	h2 := newHarness(t, harnessOptions{dir: dir})
	o := h2.ask("5", "m2", "after the crash")
	if !o.Result.Success || len(h2.out.texts("")) != 1 {
		t.Fatalf("no reply after restart: %+v %q", o, h2.out.texts(""))
	}
	texts := []string{}
	for _, e := range h2.entries(chatKeyOf("5")) {
		texts = append(texts, e.Text)
	}
	want := "before the crash|echo: before the crash|after the crash|echo: after the crash"
	if got := strings.Join(texts, "|"); got != want {
		t.Errorf("log after torn line = %s, want %s", got, want)
	}
	// The rebuilt history reached the model.
	msgs := dialogue(h2.fake.Requests()[0])
	if len(msgs) != 3 || msgs[0].Content != "before the crash" || msgs[1].Content != "echo: before the crash" {
		t.Errorf("history after restart: %+v", msgs)
	}
}

func TestHistoryComesBackAfterRuntimeRebuilt(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessOptions{dir: dir})
	h.ask("8", "m1", "my name is Ann")
	h.ask("8", "m2", "I live in Oslo")
	h.close()

	h2 := newHarness(t, harnessOptions{dir: dir})
	h2.ask("8", "m3", "what is my name?")
	var convo []string
	for _, m := range dialogue(h2.fake.Requests()[0]) {
		convo = append(convo, m.Role+":"+m.Content)
	}
	want := "user:my name is Ann|assistant:echo: my name is Ann|user:I live in Oslo|assistant:echo: I live in Oslo|user:what is my name?"
	if got := strings.Join(convo, "|"); got != want {
		t.Errorf("prompt after restart:\n%s\nwant\n%s", got, want)
	}
	// Other chats do not leak in.
	h2.ask("other", "x1", "hi")
	for _, m := range h2.fake.Requests()[1].Messages {
		if strings.Contains(m.Content, "Ann") && m.Role != "system" {
			t.Errorf("chat 'other' saw %q", m.Content)
		}
	}
}

func TestStreamingRunDeliversAndEmitsTextDeltas(t *testing.T) {
	h := newHarness(t, harnessOptions{stream: true, handler: func(r fakeopenai.Request) fakeopenai.Response {
		if !r.Stream {
			return fakeopenai.Response{Status: 400, ErrorMessage: "expected a streaming request"}
		}
		if len(r.ToolResults()) > 0 {
			return fakeopenai.Response{}
		}
		return fakeopenai.Response{
			Content:   "Let me answer that for you.",
			ToolCalls: []fakeopenai.ToolCall{call("chat_send", map[string]string{"text": "streamed reply with {json} inside"})},
		}
	}})
	var mu sync.Mutex
	var deltas []string
	done := make(chan ingress.Outcome, 1)
	_, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel, ChatKey: chatKeyOf("s"),
		Message: ingress.IncomingChatMessage{ChatID: "s", MessageID: "1", Text: "stream please"},
		OnStep: func(_ context.Context, ev agent.StepEvent) {
			if ev.Type == "text_delta" {
				mu.Lock()
				deltas = append(deltas, ev.Text)
				mu.Unlock()
			}
		},
		OnDone: func(o ingress.Outcome) { done <- o },
	})
	if err != nil {
		t.Fatal(err)
	}
	o := <-done
	if got := h.out.texts(""); len(got) != 1 || got[0] != "streamed reply with {json} inside" {
		t.Fatalf("user saw %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deltas) < 2 || strings.Join(deltas, "") != "Let me answer that for you." {
		t.Errorf("text deltas %q: want several chunks joining to the model text, and no tool-call JSON", deltas)
	}
	_ = o
}

func TestModelErrorsAreRetriedThenReportedInOneLine(t *testing.T) {
	var calls atomic.Int32
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		if calls.Add(1) <= 2 {
			return fakeopenai.Response{Status: 503}
		}
		return fakeopenai.EchoChatSend(r)
	}})
	o := h.ask("r", "1", "are you there?")
	if !o.Result.Success || len(h.out.texts("")) != 1 {
		t.Fatalf("two 503s then success should answer: %+v %q", o, h.out.texts(""))
	}

	h2 := newHarness(t, harnessOptions{handler: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Response{Status: 500, ErrorMessage: "upstream exploded"}
	}})
	o = h2.ask("r", "1", "are you there?")
	if o.Result.Success || o.Err == nil {
		t.Fatalf("a model that always fails must fail the run: %+v", o)
	}
	got := h2.out.texts("")
	if len(got) != 1 || strings.Contains(got[0], "exploded") || strings.Contains(got[0], "\n") {
		t.Errorf("user saw %q, want one short line without internals", got)
	}
	if n := h2.fake.RequestCount(); n != 3 {
		t.Errorf("model called %d times, want 1 + 2 retries", n)
	}
}

func TestContextLengthErrorDropsOldestHistoryAndRetries(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: func(r fakeopenai.Request) fakeopenai.Response {
		if len(r.Messages) > 6 {
			return fakeopenai.Response{Status: 400, ErrorCode: "context_length_exceeded"}
		}
		return fakeopenai.EchoChatSend(r)
	}})
	for i := 0; i < 4; i++ { // 4 turns of 2 messages; the 4th already overflows
		h.ask("c", fmt.Sprint(i), fmt.Sprintf("turn %d", i))
	}
	o := h.ask("c", "last", "final question")
	if !o.Result.Success || o.Result.ToolCalls[0].Input["text"] != "echo: final question" {
		t.Fatalf("run did not recover from the context-length error: %+v", o)
	}
	reqs := h.fake.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) > 6 || last.Messages[len(last.Messages)-1].Content != "final question" {
		t.Errorf("retried request has %d messages", len(last.Messages))
	}
	// What was kept is the newest history, not the oldest.
	if strings.Contains(fmt.Sprint(last.Messages), "turn 0") {
		t.Error("oldest turn still sent after the history was halved")
	}
}

func TestOfflineModelDrivesTheToolLoop(t *testing.T) {
	h := newHarness(t, harnessOptions{model: llm.NewOffline()})
	o := h.ask("o", "1", "hello ship")
	if got := h.out.texts(""); len(got) != 1 || !strings.Contains(got[0], `You said: "hello ship"`) || o.Result.ToolCalls[0].Tool != "chat_send" {
		t.Fatalf("offline reply %q via %+v", got, o.Result.ToolCalls)
	}
	engine.ForgetHistory(h.engine, chatKeyOf("o")) // only the log knows the first message now
	o = h.ask("o", "2", "what did I say earlier?")
	if len(o.Result.ToolCalls) != 2 || o.Result.ToolCalls[0].Tool != "chat_load_history" || o.Result.ToolCalls[1].Tool != "chat_send" {
		t.Fatalf("tool calls %+v, want chat_load_history then chat_send", o.Result.ToolCalls)
	}
	got := h.out.texts("")
	if len(got) != 2 || !strings.Contains(got[1], `"hello ship"`) {
		t.Errorf("offline answer about history = %q", got)
	}
}

func TestStepLimitStopsARunawayLoop(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: func(fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{call("no_such_tool", map[string]int{})}}
	}})
	o := h.ask("x", "1", "loop forever")
	if n := h.fake.RequestCount(); n != 30 {
		t.Errorf("model called %d times, want the 30-step limit", n)
	}
	if o.Result.Success || len(h.out.all()) != 0 {
		t.Errorf("runaway run: success=%v sent=%q", o.Result.Success, h.out.texts(""))
	}
	if !strings.Contains(o.Result.ToolCalls[0].Output, "unknown tool") {
		t.Errorf("unknown tool result = %s", o.Result.ToolCalls[0].Output)
	}
}
