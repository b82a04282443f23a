package feishu

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Keys of a button's callback value. The value is the card's own (Feishu
// hands it back as sent, and no presser can change it), so it can carry
// where the card is: the thread, which the callback's context does not
// name, and the chat type.
const (
	valueCommand  = "ship_cmd"
	valueThread   = "ship_thread"
	valueChatType = "ship_chat_type"
)

// kindButtons keeps the uuids of cards with buttons apart.
const kindButtons = "buttons"

// pressTimeout is how long a press waits for its command's reply: Feishu
// wants the callback answered within 3 s
// (https://open.feishu.cn/document/feishu-cards/card-callback-communication).
// A command slower than this is answered "Working on it" and its reply
// goes into the chat when it comes.
const pressTimeout = 2500 * time.Millisecond

// maxToastChars keeps a toast short: it is a notice, not a message.
const maxToastChars = 200

var _ dispatch.ButtonSender = (*Adapter)(nil)

// buttonJSON is a card JSON 2.0 button whose press calls back with value
// (https://open.feishu.cn/document/feishu-cards/card-json-v2-components/interactive-components/button).
type buttonJSON struct {
	Tag       string         `json:"tag"`
	Text      cardText       `json:"text"`
	Type      string         `json:"type"`
	Width     string         `json:"width"`
	Behaviors []buttonAction `json:"behaviors"`
}

type cardText struct {
	Tag     string `json:"tag"`
	Content string `json:"content"`
}

type buttonAction struct {
	Type  string            `json:"type"`
	Value map[string]string `json:"value"`
}

// SendButtons sends text (the model's Markdown, rendered like a reply) as
// a card with one button per choice under it; a press runs the button's
// Data as a chat command from the presser (onCardAction). Text too long
// for one card goes first as reply cards, the buttons under its last part.
func (a *Adapter) SendButtons(ctx context.Context, req dispatch.RequestContext, text string, buttons []dispatch.Button) error {
	if len(buttons) == 0 {
		return a.SendText(ctx, req, text)
	}
	if req.ChatID == "" {
		return errors.New("feishu: no chat to send to")
	}
	parts := markdown.Feishu(text)
	if len(parts) > 1 {
		if err := a.send(ctx, req, strings.Join(parts[:len(parts)-1], "\n\n"), kindReply); err != nil {
			return err
		}
		parts = parts[len(parts)-1:]
	}
	var elements []any
	if len(parts) == 1 {
		elements = append(elements, cardMarkdown{Tag: "markdown", Content: parts[0]})
	}
	for i, b := range buttons {
		typ := "default"
		if i == 0 {
			typ = "primary"
		}
		elements = append(elements, buttonJSON{
			Tag: "button", Text: cardText{Tag: "plain_text", Content: b.Text}, Type: typ, Width: "fill",
			Behaviors: []buttonAction{{Type: "callback", Value: map[string]string{
				valueCommand: b.Data, valueThread: req.ThreadID, valueChatType: req.ChatType,
			}}},
		})
	}
	content, err := encodeCard(newCard(elements...))
	if err != nil {
		return err
	}
	n := a.uuids.next(kindButtons, req.MessageID)
	_, err = a.sendMessage(ctx, req, larkim.MsgTypeInteractive, content, uuidFor(kindButtons, req.MessageID, n, 0))
	return err
}

// onCardAction is the SDK's handler for card.action.trigger, a press of a
// button on one of the bot's cards, from the websocket or the webhook. The
// button's command runs as the presser in the card's chat and topic, with
// the identity a message of theirs there would have (chatKey, open_id), so
// the person a question was put to is recognised; its reply is the toast
// the presser sees. Presses from outside the allowlists, and presses of
// buttons ship did not make, do nothing.
func (a *Adapter) onCardAction(ctx context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
	botID, ok := a.identity()
	if !ok {
		return nil, errNotReady
	}
	none := &callback.CardActionTriggerResponse{}
	if ev == nil || ev.Event == nil || ev.Event.Action == nil || ev.Event.Operator == nil || ev.Event.Context == nil {
		return none, nil
	}
	var eventID string
	if ev.EventV2Base != nil && ev.EventV2Base.Header != nil {
		eventID = ev.EventV2Base.Header.EventID
	}
	presser, chatID := ev.Event.Operator.OpenID, ev.Event.Context.OpenChatID
	switch {
	case presser == "" || presser == botID || chatID == "":
		return none, nil
	case !a.allowC.Allows(chatID) || !a.allowU.Allows(presser):
		a.log.Debug().Str("chatId", chatID).Str("userId", presser).Msg("button press outside the allowlists ignored")
		return none, nil
	}
	str := func(k string) string { s, _ := ev.Event.Action.Value[k].(string); return s }
	name, args, ok := adapters.ButtonCommand(str(valueCommand))
	if !ok {
		return none, nil
	}
	if eventID != "" {
		// A press Feishu delivers again (its answer was lost) is answered
		// once: the command is not run twice.
		dup, busy := a.seen.claim(eventID)
		if dup || busy {
			return none, nil
		}
		defer func() {
			if err := a.seen.done(eventID); err != nil {
				a.log.Warn().Err(err).Str("eventId", eventID).Msg("remembering a feishu press")
			}
		}()
	}
	thread := str(valueThread)
	req := dispatch.RequestContext{
		Channel: chat.ChannelFeishu, ChatID: chatID, ChatType: str(valueChatType), ThreadID: thread,
		ChatKey: chatKey(chatID, thread), UserID: presser, MessageID: ev.Event.Context.OpenMessageID,
	}
	reply, late := a.pressCommand(name, args, req)
	if late {
		return &callback.CardActionTriggerResponse{Toast: &callback.Toast{Type: "info", Content: "Working on it…"}}, nil
	}
	if reply == "" {
		return none, nil
	}
	return &callback.CardActionTriggerResponse{Toast: &callback.Toast{Type: "info", Content: truncateRunes(reply, maxToastChars)}}, nil
}

// pressCommand runs a pressed button's command for at most pressTimeout;
// late is true when it takes longer, and its reply then goes into the chat
// as a note once it comes.
func (a *Adapter) pressCommand(name, args string, req dispatch.RequestContext) (reply string, late bool) {
	done := make(chan string, 1)
	a.workers.Go(func(ctx context.Context) {
		r, ok := a.opts.Host.Command(ctx, name, args, req)
		if !ok {
			a.log.Debug().Str("chatKey", req.ChatKey).Str("command", name).Msg("button press with an unknown command")
			r = ""
		}
		done <- r
	})
	select {
	case r := <-done:
		return r, false
	case <-time.After(pressTimeout):
	}
	a.workers.Go(func(ctx context.Context) {
		select {
		case r := <-done:
			if r != "" {
				if err := a.send(ctx, req, r, kindNote); err != nil {
					a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Msg("sending the reply to a button press")
				}
			}
		case <-ctx.Done():
		}
	})
	return "", true
}

// truncateRunes cuts s to at most n characters, marking the cut.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
