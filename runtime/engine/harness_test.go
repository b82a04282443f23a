package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/logbuf"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/policy"
	"github.com/shipmyagent/ship/runtime/profiles"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/usage"
	"github.com/shipmyagent/ship/tools"
)

// testChannel stands in for a platform: its dispatcher records what a
// platform would have shown the user.
const testChannel = "telegram"

type sent struct {
	Req     dispatch.RequestContext
	Text    string
	Buttons []dispatch.Button
}

// outbox records deliveries; it can be told to fail.
type outbox struct {
	mu   sync.Mutex
	msgs []sent
	fail error
}

func (o *outbox) SendText(_ context.Context, req dispatch.RequestContext, text string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.msgs = append(o.msgs, sent{Req: req, Text: text})
	return nil
}

// SendButtons is the platform's ButtonSender: approval requests come
// with Approve and Deny buttons.
func (o *outbox) SendButtons(_ context.Context, req dispatch.RequestContext, text string, buttons []dispatch.Button) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.msgs = append(o.msgs, sent{req, text, buttons})
	return nil
}

// FileLimits and SendFiles make the outbox a platform that takes files
// (Telegram's limits); a file "arrives" as a message naming it.
func (o *outbox) FileLimits(dispatch.RequestContext) dispatch.FileLimits {
	return dispatch.FileLimits{MaxBytes: map[string]int64{"image": 10 << 20, "file": 50 << 20}, MaxFiles: 10, MaxCaption: 1024}
}

func (o *outbox) SendFiles(_ context.Context, req dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return nil, o.fail
	}
	ids := make([]string, len(files))
	for i, f := range files {
		o.msgs = append(o.msgs, sent{Req: req, Text: "file " + f.Name + " " + caption})
		ids[i] = "id-" + f.Name
	}
	return ids, nil
}

func (o *outbox) all() []sent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]sent(nil), o.msgs...)
}

func (o *outbox) texts(chatKey string) []string {
	var out []string
	for _, s := range o.all() {
		if chatKey == "" || s.Req.ChatKey == chatKey {
			out = append(out, s.Text)
		}
	}
	return out
}

type harnessOptions struct {
	dir         string // reuse a project folder (restart); "" → new temp dir
	model       llms.Model
	handler     fakeopenai.Handler
	concurrency int
	capacity    int
	stream      bool
	agentMD     string
	history     agent.HistoryLimits
	journal     bool // keep a pending-work journal in dir/.ship
	userLimit   ingress.UserLimiterOptions
	// policy is the tools object of ship.json (without exec); exec adds
	// exec_shell, running in dir with secrets hidden.
	policy string
	exec   bool
	// contacts adds chat_contact_lookup and chat_contact_send, with a
	// book in dir/.ship.
	contacts bool
	secrets  []string
	logAll   bool // keep info lines in logs too
	// models, when set, are llm.models beside the default (openai
	// "fake-model" on the fake), each chat's choice kept in
	// dir/.ship/models.json; modelSwitch is llm.switch.
	models      map[string]llm.Config
	modelSwitch string
	// modelChoices keeps the choices there instead (cluster mode).
	modelChoices records.Table
	// show adds chat_ask (questions kept in dir/.ship/questions.json) and
	// chat_send_file (files of dir).
	show bool
	// now is the questions' clock (nil: time.Now).
	now func() time.Time
	// usage counts tokens; budget is limits.tokens.
	usage  *usage.Tally
	budget usage.Budget
	// profiles are the agent profiles (agents in ship.json).
	profiles *profiles.Set
	// jobs lets exec_shell run background jobs.
	jobs *jobs.Manager
	// subAgents offers agent_spawn (with jobs).
	subAgents *engine.SubAgentOptions
}

// harness is the core engine wired as in production: real ChatStore, queue,
// runtime and tools, and langchaingo's real OpenAI client talking to the
// loopback fake.
type harness struct {
	t      *testing.T
	dir    string
	fake   *fakeopenai.Server
	logs   *logbuf.Buffer
	engine *engine.Engine
	store  chat.Log
	out    *outbox
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{t: t, dir: o.dir, out: &outbox{}}
	if h.dir == "" {
		h.dir = t.TempDir()
	}
	if o.agentMD != "" {
		if err := os.WriteFile(filepath.Join(h.dir, "Agent.md"), []byte(o.agentMD), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := o.model
	if model == nil {
		fake, err := fakeopenai.Start(o.handler)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fake.Close)
		h.fake = fake
		m, err := openai.New(openai.WithBaseURL(fake.BaseURL()), openai.WithToken("test-key"), openai.WithModel("fake-model"))
		if err != nil {
			t.Fatal(err)
		}
		model = m
	}
	var cat *models.Catalog
	choicesPath := ""
	if o.models != nil {
		c, err := models.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "fake-model", BaseURL: h.fake.BaseURL(), APIKey: "test-key", Models: o.models})
		if err != nil {
			t.Fatal(err)
		}
		cat, choicesPath = c, filepath.Join(h.dir, ".ship", "models.json")
	}
	h.logs = &logbuf.Buffer{}
	level := zerolog.WarnLevel
	if o.logAll {
		level = zerolog.InfoLevel
	}
	log := zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), h.logs)).Level(level)
	pol, err := policy.Parse(json.RawMessage(o.policy))
	if err != nil {
		t.Fatal(err)
	}
	var qs *questions.Store
	if o.show {
		tab, err := records.OpenFile(filepath.Join(h.dir, ".ship", "questions.json"))
		if err != nil {
			t.Fatal(err)
		}
		qs = questions.New(tab, o.now)
	}
	shell := tools.NewExecShell(tools.ExecShellOptions{Dir: h.dir, Secrets: o.secrets, DropEnv: []string{"LLM_API_KEY"}, Logger: log, Jobs: o.jobs})
	toolset := func(s chat.Log, d *dispatch.Deliverer) []agent.Tool {
		ts := tools.Default(s, d)
		if o.exec {
			ts = append(ts, shell)
		}
		if o.show {
			ts = append(ts, &tools.ChatAsk{Deliverer: d, Questions: qs},
				&tools.ChatSendFile{Deliverer: d, Dir: h.dir, Keep: media.NewStore(h.dir, tools.MaxKeptFileBytes), Private: []string{".ship", ".env", "ship.json"}})
		}
		if o.contacts {
			book, err := contacts.Open(filepath.Join(h.dir, ".ship", "contacts.json"), log)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tools.Contacts(book, d)...)
		}
		return ts
	}
	journalPath := ""
	if o.journal {
		journalPath = filepath.Join(h.dir, ".ship", "pending.jsonl")
	}
	eng, err := engine.New(engine.Options{
		Tools:         toolset,
		Policy:        func() *policy.Policy { return pol },
		ApprovalsPath: filepath.Join(h.dir, ".ship", "approvals.json"),
		Redact:        shell.Redact,
		ChatsDir:      filepath.Join(h.dir, ".ship", "chats"),
		Durability:    chat.DurabilityNone,
		Model:         model,
		AgentMDPath:   filepath.Join(h.dir, "Agent.md"),
		History:       o.history,
		Queue:         queue.Options{Capacity: o.capacity, Concurrency: o.concurrency},
		Stream:        o.stream,
		RetryBackoff:  time.Millisecond,
		JournalPath:   journalPath,
		UserLimit:     o.userLimit,
		Logger:        log,
		Questions:     qs,

		Usage: o.usage, TokenBudget: o.budget, Profiles: o.profiles, Jobs: o.jobs, SubAgents: o.subAgents,
		Models: cat, ModelChoicesPath: choicesPath, ModelSwitch: o.modelSwitch, ModelChoices: o.modelChoices,
	})
	if err != nil {
		t.Fatal(err)
	}
	eng.Register(testChannel, h.out)
	h.engine, h.store = eng, engine.StoreOf(eng)
	t.Cleanup(h.close)
	return h
}

// close stops the queue and the store, as a shutdown would.
func (h *harness) close() { _, _ = h.engine.Close(context.Background()) }

// waitIdle waits until nothing is waiting or running in the queue.
func (h *harness) waitIdle() {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for {
		if st := h.engine.QueueStats(); st.Waiting == 0 && st.Running == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("queue never went idle")
		}
		time.Sleep(time.Millisecond)
	}
}

func chatKeyOf(chatID string) string { return "telegram:chat:" + chatID }

// send submits a user message and returns a channel that yields its outcome.
func (h *harness) send(chatID, msgID, text string) <-chan ingress.Outcome {
	h.t.Helper()
	done := make(chan ingress.Outcome, 1)
	_, err := h.engine.Submit(context.Background(), ingress.Submission{
		Channel: testChannel,
		ChatKey: chatKeyOf(chatID),
		Message: ingress.IncomingChatMessage{ChatID: chatID, Text: text, MessageID: msgID, UserID: "u1", ChatType: "private"},
		OnDone:  func(o ingress.Outcome) { done <- o },
	})
	if err != nil {
		h.t.Fatalf("accepting %q: %v", text, err)
	}
	return done
}

// ask sends a message and waits for its run to end.
func (h *harness) ask(chatID, msgID, text string) ingress.Outcome {
	h.t.Helper()
	select {
	case o := <-h.send(chatID, msgID, text):
		return o
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		h.t.Fatalf("no outcome for %q", text)
		return ingress.Outcome{}
	}
}

func (h *harness) entries(chatKey string) []chat.ChatLogEntryV1 {
	h.t.Helper()
	var out []chat.ChatLogEntryV1
	if err := h.engine.Scan(context.Background(), chatKey, func(e chat.ChatLogEntryV1) bool {
		out = append(out, e)
		return true
	}); err != nil {
		h.t.Fatal(err)
	}
	return out
}

func roles(es []chat.ChatLogEntryV1) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("%s:%s|", e.Role, e.Text)
	}
	return s
}

// dialogue is a model request's conversation: the messages after the
// system prompt, without the runtime note ship puts before the message
// being answered (the time, who speaks), which is never history.
func dialogue(r fakeopenai.Request) []fakeopenai.Message {
	var out []fakeopenai.Message
	for _, m := range r.Messages[1:] {
		if m.Role == "user" && strings.HasPrefix(m.Content, "[ship runtime") {
			continue
		}
		out = append(out, m)
	}
	return out
}
