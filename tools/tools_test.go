package tools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/tools"
)

func openStore(t *testing.T) *chat.Store {
	t.Helper()
	s, err := chat.OpenStore(chat.StoreOptions{Dir: t.TempDir(), Durability: chat.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestChatSendRefusesBadInputWithoutSending(t *testing.T) {
	store := openStore(t)
	sent := 0
	reg := dispatch.NewRegistry()
	reg.Register("api", dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { sent++; return nil }))
	ctx := dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "api", ChatID: "c", ChatKey: "api:chat:c"})
	send := &tools.ChatSend{Deliverer: &dispatch.Deliverer{Registry: reg, Store: store}}

	for _, args := range []string{`{}`, `{"text":"   "}`, `{"text":42}`, `[1]`, `{"text":"\xff"}`} {
		res := send.Call(ctx, json.RawMessage(args))
		if res.OK || res.Delivered || !strings.Contains(res.Content, `"success":false`) {
			t.Errorf("%s: %+v, want a failure", args, res)
		}
	}
	if sent != 0 {
		t.Errorf("sent %d messages for bad input", sent)
	}

	// Without a request context there is nowhere to send: a truthful failure.
	res := send.Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
	if res.OK || !strings.Contains(res.Content, "no chat to send to") {
		t.Errorf("no request: %+v", res)
	}
	// An unknown channel is a failure too, never a silent success.
	res = send.Call(dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "qq", ChatKey: "qq:c2c:x"}), json.RawMessage(`{"text":"hi"}`))
	if res.OK || !strings.Contains(res.Content, "cannot send") {
		t.Errorf("unknown channel: %+v", res)
	}

	res = send.Call(ctx, json.RawMessage(`{"text":"hi"}`))
	if !res.OK || !res.Delivered || sent != 1 {
		t.Fatalf("good send: %+v (sent %d)", res, sent)
	}
	got, err := store.Recent(context.Background(), "api:chat:c", 5)
	if err != nil || len(got) != 1 || got[0].Role != chat.RoleAssistant || got[0].Text != "hi" {
		t.Errorf("log after send = %+v, %v", got, err)
	}
}

func TestChatLoadHistoryOutsideARunFailsClearly(t *testing.T) {
	h := &tools.ChatLoadHistory{Store: openStore(t)}
	ctx := dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "api", ChatKey: "api:chat:c"})
	for args, want := range map[string]string{
		`{"limit":"ten"}`: "arguments must be",
		`{"limit":5}`:     "during a run",
	} {
		res := h.Call(ctx, json.RawMessage(args))
		if res.OK || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %s, want %q", args, res.Content, want)
		}
	}
	res := h.Call(context.Background(), json.RawMessage(`{}`))
	if res.OK || !strings.Contains(res.Content, "no chat") {
		t.Errorf("no request: %s", res.Content)
	}
}
