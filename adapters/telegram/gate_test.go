package telegram_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/adaptertest"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// In cluster mode one replica long-polls (it holds the connection's lease)
// while every replica runs turns: these tests give the adapter a gate in
// place of the lease.

// arriveElsewhere hands the engine a private message as the replica that
// polled it would: the turn runs here and its reply goes out through this
// adapter.
func (e *env) arriveElsewhere(chatID int64, messageID int, text string) {
	e.t.Helper()
	id := strconv.FormatInt(chatID, 10)
	_, err := e.engine.Accept(e.ctx(), ingress.Submission{
		Channel: chat.ChannelTelegram, ChatKey: "telegram:chat:" + id,
		Message: ingress.IncomingChatMessage{ChatID: id, ChatType: "private", MessageID: strconv.Itoa(messageID),
			UserID: id, Username: "ann", Text: text},
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// typed reports whether "typing…" was shown in chatID.
func (e *env) typed(chatID int64) bool {
	for _, a := range e.tg.ChatActions() {
		if a.ChatID == chatID && a.Action == "typing" {
			return true
		}
	}
	return false
}

func TestStandbyAnswersAndTypesWithoutPolling(t *testing.T) {
	gate := adaptertest.NewGate() // never opened: another replica polls
	e := newEnv(t, setup{noStart: true, opts: func(o *telegram.Options) { o.Streaming = true }})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	e.arriveElsewhere(42, 7, "hello from the poller")
	if s := e.waitSent(1)[0]; s.ChatID != 42 || s.Text != "echo: hello from the poller" {
		t.Fatalf("the standby sent %+v", s)
	}
	if !e.typed(42) {
		t.Error("the standby showed no typing while the turn ran")
	}
	if n := e.tg.Calls("getUpdates"); n != 0 {
		t.Errorf("the standby called getUpdates %d times: two replicas would poll", n)
	}
	if calls, _ := gate.Counts(); calls != 0 {
		t.Errorf("connect ran %d times behind a shut gate", calls)
	}
	if st := e.adapter.Status(); st.State != adapters.StateStandby {
		t.Errorf("status %+v after the reply, want standby", st)
	}
}

// Webhook mode is not gated: every replica takes Telegram's calls.
func TestWebhookIsServedOnAStandby(t *testing.T) {
	gate := adaptertest.NewGate()
	srv, route := newWebhookServer(t)
	e := newEnv(t, setup{mode: telegram.ModeWebhook, noStart: true, opts: func(o *telegram.Options) {
		o.WebhookSecret = "s3cret-s3cret"
		o.WebhookURL = srv.URL
	}})
	e.adapter.GateConnection(gate.Hold)
	route(e.adapter)
	e.start()
	waitWebhook(t, e.tg)
	if status, err := e.tg.DeliverWebhook(e.ctx(), e.tg.PrivateText(43, "bob", "via the webhook")); err != nil || status != http.StatusOK {
		t.Fatalf("webhook delivery: %d %v", status, err)
	}
	if s := e.waitSent(1)[0]; s.ChatID != 43 || s.Text != "echo: via the webhook" {
		t.Fatalf("sent %+v", s)
	}
	// Running once the webhook is set, which the adapter notes right after
	// Telegram's answer: a webhook call may be served a moment before.
	adaptertest.WaitFor(t, "the adapter running without the lease", func() bool { return e.adapter.Status().State == "running" })
	if calls, _ := gate.Counts(); calls != 0 {
		t.Errorf("webhook mode asked the gate %d times", calls)
	}
}

// The lease is won, lost and won again: polling stops and resumes from the
// saved offset, and in between the replica still answers and types.
func TestPollingStopsAndResumesWithTheGate(t *testing.T) {
	gate := adaptertest.NewGate()
	e := newEnv(t, setup{noStart: true, opts: func(o *telegram.Options) { o.Streaming = true }})
	e.adapter.GateConnection(gate.Hold)
	e.start()
	adaptertest.WaitStandby(t, e.adapter)

	gate.Open()
	e.tg.Push(e.tg.PrivateText(42, "ann", "first"))
	if s := e.waitSent(1)[0]; s.Text != "echo: first" {
		t.Fatalf("sent %+v", s)
	}
	if st := e.adapter.Status(); st.State != "running" {
		t.Errorf("status %+v while holding the connection, want running", st)
	}

	gate.Shut()
	gate.WaitReturned(t, 1)
	adaptertest.WaitStandby(t, e.adapter)
	// Lost the lease, the replica still runs the turns it is handed.
	e.arriveElsewhere(44, 9, "taken by the new poller")
	if s := e.waitSent(2)[1]; s.ChatID != 44 || s.Text != "echo: taken by the new poller" {
		t.Fatalf("after losing the lease the replica sent %+v", s)
	}
	if !e.typed(44) {
		t.Error("after losing the lease the replica showed no typing")
	}

	// Sent while nobody polls here; it waits at Telegram.
	e.tg.Push(e.tg.PrivateText(42, "ann", "second"))
	gate.Open()
	if s := e.waitSent(3)[2]; s.Text != "echo: second" {
		t.Fatalf("after the lease came back the bot sent %+v", s)
	}
	e.idle()
	if n := len(e.tg.Sent()); n != 3 {
		t.Errorf("%d messages sent, want 3: the first was polled again", n)
	}
	if calls, _ := gate.Counts(); calls != 2 {
		t.Errorf("connect called %d times, want 2", calls)
	}
	adaptertest.WaitFor(t, "the adapter running again", func() bool { return e.adapter.Status().State == "running" })
}

// memPoints is the replicas' shared resume points; in ship it is the
// ship_offsets KV bucket (runtime/cluster ResumePoints).
type memPoints struct {
	mu     sync.Mutex
	values map[string][]byte
}

func (m *memPoints) Load(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values[key], nil
}

func (m *memPoints) Save(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.values[key] = value
	return nil
}

func (m *memPoints) get(key string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.values[key])
}

// The poll resumes from the offset the last holder saved in the shared
// resume points (a decimal under "telegram", the layout replicas of every
// version agree on), not from the project's cache: an update that holder
// already took is not answered twice.
func TestPollingResumesFromTheSharedOffset(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	taken := e.tg.Push(e.tg.PrivateText(42, "ann", "answered by the last holder"))
	points := &memPoints{values: map[string][]byte{"telegram": []byte(strconv.FormatInt(taken+1, 10))}}
	var resumer adapters.Resumer = e.adapter // what cmd/ship finds by type assertion
	resumer.KeepResumePointsIn(points)
	e.start()

	next := e.tg.Push(e.tg.PrivateText(42, "ann", "after the takeover"))
	if s := e.waitSent(1)[0]; s.Text != "echo: after the takeover" {
		t.Fatalf("the new holder sent %+v first: it did not resume from the shared offset", s)
	}
	adaptertest.WaitFor(t, "the offset saved", func() bool { return points.get("telegram") == strconv.FormatInt(next+1, 10) })
	e.idle()
	if n := len(e.tg.Sent()); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".ship", ".cache", "telegram", "offset.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("offset.json in the cache: %v; want the offset kept only in the shared points", err)
	}
}
