package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Command answers the chat commands every platform offers: /start, /help,
// /status and /clear. name is the command without the slash or a @bot
// suffix. They are answered at once by the adapter, never queued, so
// /status works even when the queue is long. ok is false when name is not
// one of these; the message then goes to the agent like any other.
func (e *Engine) Command(ctx context.Context, name, args string, req dispatch.RequestContext) (reply string, ok bool) {
	switch strings.ToLower(name) {
	case "start":
		return "Hi! I'm an assistant. Send me a message and I'll answer here. /help lists what else I understand.", true
	case "help":
		how := "mention me"
		if d, ok := e.registry.Lookup(req.Channel); ok && dispatch.ReplyAddressesBot(d) {
			how = "mention me or reply to my message"
		}
		return "Just write to me (in groups: " + how + ").\n" +
			"/status – queue and model\n" +
			"/model – list the models; /model NAME switches this chat\n" +
			e.agentHelp() +
			"/clear – forget our recent conversation (the log is kept)\n" +
			"/memory – this chat's long-term notes; /memory clear empties them\n" +
			"/approve CODE, /deny CODE – answer a request to run a tool\n" +
			"/jobs – this chat's background jobs; /cancel ID stops one\n" +
			"/help – this text", true
	case "agent", "agents":
		return e.agentCommand(args)
	case "model", "models":
		return e.modelCommand(ctx, args, req), true
	case "status":
		return e.status(ctx, req.ChatKey), true
	case "memory":
		return e.memoryCommand(ctx, args, req), true
	case dispatch.AnswerCommand:
		return e.answerCommand(ctx, args, req), true
	case "jobs":
		return e.jobsText(req.ChatKey), true
	case "cancel":
		return e.cancelCommand(args, req), true
	case "approve", "deny":
		return e.answerApproval(ctx, strings.EqualFold(name, "approve"), args, req), true
	case "clear":
		e.runtime.Forget(req.ChatKey)
		if _, err := e.store.Append(ctx, chat.ChatLogEntryV1{
			Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey, UserID: req.UserID,
			Role: chat.RoleSystem, Text: "history cleared by /clear", Meta: map[string]any{"event": chat.EventClear},
		}); err != nil {
			e.log.Error().Err(err).Str("chatKey", req.ChatKey).Msg("logging /clear")
		}
		return "Done: I forgot our recent conversation. (The chat log is kept.)", true
	}
	return "", false
}

func (e *Engine) status(ctx context.Context, chatKey string) string {
	st := e.queue.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\nQueue: %d waiting, %d running", e.statusModel(ctx, chatKey), st.Waiting, st.Running)
	for _, k := range st.RunningChatKeys {
		if k == chatKey {
			b.WriteString("\nThis chat: a message is being answered now")
			return b.String()
		}
	}
	for _, it := range e.queue.Pending() {
		if it.ChatKey == chatKey {
			if pos, ok := e.queue.Position(it.ID); ok {
				fmt.Fprintf(&b, "\nThis chat: next message is #%d in line", pos)
			}
			return b.String()
		}
	}
	b.WriteString("\nThis chat: nothing waiting")
	return b.String()
}

// statusModel is the model /status names: the chat's, as "name
// (provider/model)" when several are configured.
func (e *Engine) statusModel(ctx context.Context, chatKey string) string {
	if label := e.settings().label; len(e.picker.catalog().List()) == 1 && label != "" {
		return label
	}
	return e.ChatModel(ctx, chatKey).Label()
}
