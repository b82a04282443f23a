package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/queue"
)

func TestSummarizeSaysHowARunEnded(t *testing.T) {
	s := &Scheduler{disp: platforms(t)}
	qq := dispatch.RequestContext{Channel: "qq", ChatKey: "qq:group:G1", ChatType: "group", MessageID: "m1"}
	tg := dispatch.RequestContext{Channel: "telegram", ChatKey: "telegram:chat:1"}
	sent := agent.ToolCallRecord{Tool: "chat_send", Output: `{"success":true}`}
	refused := agent.ToolCallRecord{Tool: "chat_send", Output: `{"success":false,"error":"not delivered, and sending again will not help: qq send: the platform's reply window for this message has closed"}`}
	for _, tc := range []struct {
		name      string
		o         ingress.Outcome
		route     dispatch.RequestContext
		status    string
		resultHas string
	}{
		{"replied", ingress.Outcome{Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{sent, sent}}}, tg, StatusOK, "replied in telegram:chat:1 (2 messages)"},
		{"fallback", ingress.Outcome{FallbackSent: true}, tg, StatusOK, "replied in telegram:chat:1"},
		{"silent", ingress.Outcome{}, tg, StatusOK, "sent nothing"},
		{"qq window closed", ingress.Outcome{Result: agent.AgentResult{ToolCalls: []agent.ToolCallRecord{refused}}}, qq, StatusFailed, "reply window for this message has closed (QQ takes a bot's message only as a reply"},
		{"model failed", ingress.Outcome{Err: errors.New("running model: 500")}, tg, StatusFailed, "failed: running model: 500"},
		{"stopped before", ingress.Outcome{Err: fmt.Errorf("item x not run: %w", queue.ErrQueueStopped)}, tg, StatusInterrupted, "runs at the next start"},
		{"stopped during", ingress.Outcome{Err: fmt.Errorf("running model: %w", context.Canceled)}, tg, StatusInterrupted, "unless its reply had begun"},
	} {
		status, result := summarize(tc.o, tc.route, s.replyWindowHint(tc.route))
		if status != tc.status || !strings.Contains(result, tc.resultHas) {
			t.Errorf("%s: %s %q; want %s with %q", tc.name, status, result, tc.status, tc.resultHas)
		}
	}
}

func TestRouteFromTheChatsLatestMessage(t *testing.T) {
	s := &Scheduler{disp: platforms(t)}
	entry := func(channel, key string, meta map[string]any) chat.ChatLogEntryV1 {
		return chat.ChatLogEntryV1{Channel: channel, ChatID: "C", ChatKey: key, MessageID: "M", Role: chat.RoleUser, Meta: meta}
	}
	for _, tc := range []struct {
		name string
		e    chat.ChatLogEntryV1
		want dispatch.RequestContext
		ok   bool
	}{
		{"telegram topic: a new message in the topic", entry("telegram", "telegram:chat:C:topic:5", map[string]any{"chatType": "supergroup", "messageThreadId": float64(5)}),
			dispatch.RequestContext{Channel: "telegram", ChatID: "C", ChatKey: "telegram:chat:C:topic:5", ChatType: "supergroup", MessageThreadID: 5}, true},
		{"qq: a passive reply to the latest message", entry("qq", "qq:group:C", map[string]any{"chatType": "group"}),
			dispatch.RequestContext{Channel: "qq", ChatID: "C", ChatKey: "qq:group:C", ChatType: "group", MessageID: "M"}, true},
		{"feishu chat: a new message", entry("feishu", "feishu:chat:C", map[string]any{"chatType": "group"}),
			dispatch.RequestContext{Channel: "feishu", ChatID: "C", ChatKey: "feishu:chat:C", ChatType: "group"}, true},
		{"feishu thread: a reply in it", entry("feishu", "feishu:chat:C:thread:T", map[string]any{"chatType": "group", "threadId": "T"}),
			dispatch.RequestContext{Channel: "feishu", ChatID: "C", ChatKey: "feishu:chat:C:thread:T", ChatType: "group", ThreadID: "T", MessageID: "M"}, true},
		{"a platform not running here: a new message", entry("other", "other:chat:C", map[string]any{"chatType": "group"}),
			dispatch.RequestContext{Channel: "other", ChatID: "C", ChatKey: "other:chat:C", ChatType: "group"}, true},
		{"a task's own entry", entry(chat.ChannelScheduler, "telegram:chat:C", nil), dispatch.RequestContext{}, false},
		{"a restored entry", entry("telegram", "telegram:chat:C", map[string]any{"restored": true}), dispatch.RequestContext{}, false},
	} {
		got, ok := routeFrom(tc.e)
		if ok {
			got = s.taskRoute(got)
		}
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v; want %+v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := routeFrom(chat.ChatLogEntryV1{Channel: "telegram", ChatKey: "k", Role: chat.RoleAssistant}); ok {
		t.Error("an assistant entry gave a route")
	}
}
