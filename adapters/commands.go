package adapters

import (
	"context"
	"fmt"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
)

// Commands answers the chat commands every platform offers: /start, /help,
// /status and /clear. They are answered at once by the adapter, never
// queued, so /status works even when the queue is long.
type Commands struct {
	Engine *Engine
	// Model is shown by /status ("openai/gpt-4o-mini").
	Model string
}

// Reply answers command (without the slash or a @bot suffix) for the chat of
// req. ok is false when the command is not one of these; the message then
// goes to the agent like any other.
func (c *Commands) Reply(ctx context.Context, command string, req chat.RequestContext) (reply string, ok bool) {
	switch strings.ToLower(command) {
	case "start":
		return "Hi! I'm an assistant. Send me a message and I'll answer here. /help lists what else I understand.", true
	case "help":
		how := "mention me"
		if req.Channel == chat.ChannelTelegram {
			how = "mention me or reply to my message" // Feishu and QQ groups deliver only mentions
		}
		return "Just write to me (in groups: " + how + ").\n" +
			"/status – queue and model\n" +
			"/clear – forget our recent conversation (the log is kept)\n" +
			"/help – this text", true
	case "status":
		return c.status(req.ChatKey), true
	case "clear":
		c.Engine.Runtime.Forget(req.ChatKey)
		if _, err := c.Engine.Store.Append(ctx, chat.ChatLogEntryV1{
			Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey, UserID: req.UserID,
			Role: chat.RoleSystem, Text: "history cleared by /clear", Meta: map[string]any{"event": chat.EventClear},
		}); err != nil {
			c.Engine.Ingress.Log.Error().Err(err).Str("chatKey", req.ChatKey).Msg("logging /clear")
		}
		return "Done: I forgot our recent conversation. (The chat log is kept.)", true
	}
	return "", false
}

func (c *Commands) status(chatKey string) string {
	st := c.Engine.Queue.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "Model: %s\nQueue: %d waiting, %d running", c.Model, st.Waiting, st.Running)
	for _, k := range st.RunningChatKeys {
		if k == chatKey {
			b.WriteString("\nThis chat: a message is being answered now")
			return b.String()
		}
	}
	for _, it := range c.Engine.Queue.Pending() {
		if it.ChatKey == chatKey {
			if pos, ok := c.Engine.Queue.Position(it.ID); ok {
				fmt.Fprintf(&b, "\nThis chat: next message is #%d in line", pos)
			}
			return b.String()
		}
	}
	b.WriteString("\nThis chat: nothing waiting")
	return b.String()
}

// BusyText is the note a chat gets when its message waits behind others.
func BusyText(position int) string {
	return fmt.Sprintf("I'm busy right now: your message is #%d in line. I'll answer as soon as I can.", position)
}
