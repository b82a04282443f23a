package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/tools"
)

// notesModel is the scripted model of the notes tests: "remember chat X"
// and "remember person X" call memory_write; "write N bytes" writes a
// note that big; anything else is echoed with chat_send. A tool result
// ends the turn, its content echoed so the chat shows what the tool said.
func notesModel(r fakeopenai.Request) fakeopenai.Response {
	if res := r.ToolResults(); len(res) > 0 {
		if strings.HasPrefix(r.LastUser(), "remember") || strings.HasPrefix(r.LastUser(), "write") {
			return fakeopenai.Response{Content: "tool said: " + res[len(res)-1].Content}
		}
		return fakeopenai.Response{}
	}
	write := func(notes, text string) fakeopenai.Response {
		args, _ := json.Marshal(map[string]string{"notes": notes, "text": text})
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: tools.MemoryWriteName, Arguments: string(args)}}}
	}
	if rest, ok := strings.CutPrefix(r.LastUser(), "remember "); ok {
		notes, text, _ := strings.Cut(rest, " ")
		return write(notes, text)
	}
	if strings.HasPrefix(r.LastUser(), "write a huge note") {
		return write("chat", strings.Repeat("x", memory.DefaultMaxBytes+1))
	}
	return fakeopenai.EchoChatSend(r)
}

// newNotesHarness is the engine as cmd/ship wires it with notes in
// files under dir/.ship/memory, the memory tools beside the default ones
// and no tool policy (so the default verdicts decide).
func newNotesHarness(t *testing.T, personNotesIn string) (*harness, *memory.Store) {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), out: &outbox{}, logs: &logbuf.Buffer{}}
	fake, err := fakeopenai.Start(notesModel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	h.fake = fake
	model, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("test-key"), openai.WithModel("fake-model"))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := memory.Open(memory.Options{Dir: filepath.Join(h.dir, ".ship", "memory"), PersonNotesIn: personNotesIn})
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), h.logs)).Level(zerolog.WarnLevel)
	eng, err := engine.New(engine.Options{
		Tools: func(s chat.Log, d *dispatch.Deliverer) []agent.Tool {
			return append(tools.Default(s, d), tools.Memory(notes)...)
		},
		Policy:     func() *policy.Policy { return nil },
		Memory:     notes,
		ChatsDir:   filepath.Join(h.dir, ".ship", "chats"),
		Durability: chat.DurabilityNone,
		Model:      model, RetryBackoff: time.Millisecond, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	eng.Register(testChannel, h.out)
	h.engine, h.store = eng, engine.StoreOf(eng)
	t.Cleanup(h.close)
	return h, notes
}

// say sends text as user in chatID (a group when group is set) and waits
// for its run to end.
func say(h *harness, chatID, user string, group bool, text string) {
	h.t.Helper()
	typ := "private"
	if group {
		typ = "group"
	}
	done := make(chan ingress.Outcome, 1)
	if _, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel, ChatKey: chatKeyOf(chatID),
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: text, MessageID: text, UserID: user, ChatType: typ},
		OnDone:  func(o ingress.Outcome) { done <- o },
	}); err != nil {
		h.t.Fatalf("accepting %q: %v", text, err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		h.t.Fatalf("no outcome for %q", text)
	}
}

// requestsFor are the model requests made while answering text.
func requestsFor(h *harness, text string) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range h.fake.Requests() {
		if r.LastUser() == text {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		h.t.Fatalf("no model request answered %q", text)
	}
	return out
}

// sawInSystem reports whether every request answering text had needle
// in its system prompt, and whether any had it anywhere.
func sawInSystem(h *harness, text, needle string) (system, anywhere bool) {
	system = true
	for _, r := range requestsFor(h, text) {
		system = system && strings.Contains(r.Messages[0].Content, needle)
		anywhere = anywhere || strings.Contains(string(r.Body), needle)
	}
	return system, anywhere
}

func TestNotesOfOneChatNeverReachAnother(t *testing.T) {
	h, _ := newNotesHarness(t, "")
	say(h, "A", "u1", false, "remember chat the door code is ZEBRA-7")
	say(h, "B", "u2", false, "what is the door code?")
	say(h, "A", "u1", false, "and in A?")

	if _, anywhere := sawInSystem(h, "what is the door code?", "ZEBRA-7"); anywhere {
		t.Fatal("chat A's notes reached a model request of chat B")
	}
	if system, _ := sawInSystem(h, "and in A?", "ZEBRA-7"); !system {
		t.Fatal("chat A's notes are not in chat A's next prompt")
	}
	if !requestsFor(h, "what is the door code?")[0].HasTool(tools.MemoryWriteName) {
		t.Fatal("memory_write is not offered by default")
	}
}

func TestPersonNotesFollowThemOnlyToPrivateChats(t *testing.T) {
	h, notes := newNotesHarness(t, "")
	say(h, "u1-dm", "u1", false, "remember person prefers metric units")
	say(h, "team", "u1", true, "how far is it in the group?")
	say(h, "u1-dm", "u1", false, "how far is it privately?")
	say(h, "team", "u1", true, "remember person secretly likes jazz")

	if _, anywhere := sawInSystem(h, "how far is it in the group?", "metric"); anywhere {
		t.Fatal("a person's notes reached a group's prompt")
	}
	if system, _ := sawInSystem(h, "how far is it privately?", "metric units"); !system {
		t.Fatal("a person's notes are not in their private chat's prompt")
	}
	got, err := notes.Read(context.Background(), memory.Ref{Kind: memory.KindPerson, ID: "telegram:u1"})
	if err != nil || strings.Contains(got, "jazz") {
		t.Fatalf("person notes written from a group: %q %v", got, err)
	}
	if texts := strings.Join(h.out.texts(chatKeyOf("team")), "\n"); !strings.Contains(texts, "not kept in this chat") {
		t.Fatalf("the group was not told why person notes were refused: %s", texts)
	}
}

func TestNotesAreBoundedAndHandEditsShowNextTurn(t *testing.T) {
	h, _ := newNotesHarness(t, "")
	say(h, "A", "u1", false, "remember chat first fact")
	say(h, "A", "u1", false, "write a huge note")
	if texts := strings.Join(h.out.texts(chatKeyOf("A")), "\n"); !strings.Contains(texts, "limit is 16384") {
		t.Fatalf("a note past the bound was not refused clearly: %s", texts)
	}
	path := filepath.Join(h.dir, ".ship", "memory", "chats", "telegram_chat_A.md")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "first fact\n" {
		t.Fatalf("notes file after a refused write: %q %v", b, err)
	}
	if err := os.WriteFile(path, []byte("# Edited by hand\n- second fact\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	say(h, "A", "u1", false, "what do you know?")
	if system, _ := sawInSystem(h, "what do you know?", "- second fact"); !system {
		t.Fatal("a hand edit of the notes file is not in the next prompt")
	}
}

func TestMemoryCommand(t *testing.T) {
	h, notes := newNotesHarness(t, "")
	ctx := context.Background()
	dm := dispatch.RequestContext{Channel: testChannel, ChatID: "A", ChatKey: chatKeyOf("A"), UserID: "u1", ChatType: "private"}
	team := dispatch.RequestContext{Channel: testChannel, ChatID: "T", ChatKey: chatKeyOf("T"), UserID: "u1", ChatType: "group"}
	for _, w := range []struct {
		r    memory.Ref
		text string
	}{{memory.Ref{Kind: memory.KindChat, ID: dm.ChatKey}, "dm fact"}, {memory.Ref{Kind: memory.KindChat, ID: team.ChatKey}, "team fact"},
		{memory.Ref{Kind: memory.KindPerson, ID: "telegram:u1"}, "about u1"}} {
		if err := notes.Write(ctx, w.r, w.text); err != nil {
			t.Fatal(err)
		}
	}
	command := func(req dispatch.RequestContext, args string) string {
		reply, ok := h.engine.Command(ctx, "memory", args, req)
		if !ok {
			t.Fatal("/memory is not a command")
		}
		return reply
	}
	if got := command(dm, ""); !strings.Contains(got, "dm fact") || !strings.Contains(got, "about u1") || strings.Contains(got, "team") {
		t.Fatalf("/memory in a private chat: %q", got)
	}
	if got := command(team, ""); !strings.Contains(got, "team fact") || strings.Contains(got, "about u1") {
		t.Fatalf("/memory in a group: %q", got)
	}
	if got := command(team, "clear"); !strings.Contains(got, "Only approvers") {
		t.Fatalf("/memory clear by anyone in a group: %q", got)
	}
	if got := command(team, "clear me"); !strings.Contains(got, "Done") {
		t.Fatalf("/memory clear me: %q", got)
	}
	if got := command(dm, "clear"); !strings.Contains(got, "Done") {
		t.Fatalf("/memory clear in a private chat: %q", got)
	}
	if got := command(dm, ""); !strings.Contains(got, "none yet") || strings.Contains(got, "about u1") {
		t.Fatalf("/memory after clearing: %q", got)
	}
	if got := command(team, ""); !strings.Contains(got, "team fact") {
		t.Fatalf("clearing one chat's notes touched another's: %q", got)
	}
	if help, _ := h.engine.Command(ctx, "help", "", dm); !strings.Contains(help, "/memory") {
		t.Fatalf("/help does not name /memory: %q", help)
	}
}
