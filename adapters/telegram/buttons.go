package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// The adapter shows buttons (tool approvals) and takes their presses.
var _ adapters.ButtonSender = (*Adapter)(nil)

const (
	// MaxCallbackData is Telegram's limit on a button's callback_data, in
	// bytes.
	MaxCallbackData = 64
	// maxAnswerChars is Telegram's limit on the text of
	// answerCallbackQuery, in characters.
	maxAnswerChars = 200
	// answerTimeout bounds answering one press: Telegram stops waiting for
	// the answer after a few seconds anyway, and a worker must not hang.
	answerTimeout = 15 * time.Second
)

// buttonGone is the answer to a press on a message Telegram no longer shows
// the bot: too old, or not one the bot can read.
const buttonGone = "This button no longer works."

// SendButtons sends text with one row of inline buttons into req's chat and
// topic, through the same paced and retried path as SendText (a reply to
// req's message in groups). A press arrives as a callback_query whose data,
// Button.Data, handleCallback runs as a command. The message is never
// split, since its buttons belong to all of it: text over MaxMessageChars
// is cut short with "…".
func (a *Adapter) SendButtons(ctx context.Context, req dispatch.RequestContext, text string, buttons []dispatch.Button) error {
	markup, err := inlineKeyboard(buttons)
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("telegram: sending buttons: the text is empty")
	}
	chatID, threadID, replyTo, err := replyTarget(req)
	if err != nil {
		return err
	}
	group := req.ChatType == "group" || req.ChatType == "supergroup"
	if err := a.sender.send(ctx, chatID, threadID, replyTo, group, truncate(text, MaxMessageChars), markup); err != nil {
		return fmt.Errorf("sending buttons: %w", err)
	}
	return nil
}

// inlineKeyboard is the reply_markup for buttons: one row, each button's
// callback_data its Data.
func inlineKeyboard(buttons []dispatch.Button) (string, error) {
	if len(buttons) == 0 {
		return "", errors.New("telegram: sending buttons: no buttons")
	}
	type button struct {
		Text         string `json:"text"`
		CallbackData string `json:"callback_data"`
	}
	row := make([]button, 0, len(buttons))
	for i, b := range buttons {
		switch {
		case strings.TrimSpace(b.Text) == "":
			return "", fmt.Errorf("telegram: sending buttons: button %d has no text", i+1)
		case b.Data == "":
			return "", fmt.Errorf("telegram: sending buttons: button %q has no data", b.Text)
		case len(b.Data) > MaxCallbackData:
			return "", fmt.Errorf("telegram: sending buttons: data of button %q is %d bytes, over Telegram's limit of %d",
				b.Text, len(b.Data), MaxCallbackData)
		}
		row = append(row, button{Text: b.Text, CallbackData: b.Data})
	}
	raw, err := json.Marshal(map[string][][]button{"inline_keyboard": {row}})
	if err != nil {
		return "", fmt.Errorf("telegram: encoding buttons: %w", err)
	}
	return string(raw), nil
}

// handleCallback takes a button press: the data of an allowed user's press
// on a message in an allowed chat runs as the command it spells ("/approve
// 7KQ2MX"), and the command's reply is the press's answer. Every press is
// answered exactly once, or the user's button keeps spinning; presses are
// neither logged nor queued.
func (a *Adapter) handleCallback(ctx context.Context, u update, bot me) {
	q := u.Callback
	from, m := q.From, q.Message
	var chatID int64
	if m != nil && m.Chat != nil {
		chatID = m.Chat.ID
	}
	switch {
	case from == nil || from.IsBot || from.ID == bot.ID:
		// Only people press buttons; a bot's press is nobody's decision.
		a.answerCallback(q.ID, "")
		return
	case !a.allowC.Allows(chatID) || !a.allowU.Allows(from.ID):
		a.log.Debug().Int64("chatId", chatID).Int64("userId", from.ID).Msg("button press outside the allowlists ignored")
		a.answerCallback(q.ID, "")
		return
	case m == nil || m.Chat == nil || m.Date == 0:
		// Without the message (an inaccessible one has date 0) there is no
		// chat or topic to run the command for.
		a.answerCallback(q.ID, buttonGone)
		return
	case m.Chat.Type == "channel":
		a.answerCallback(q.ID, "")
		return
	}
	name, args, ok := commandData(q.Data)
	if !ok {
		a.log.Debug().Int64("chatId", chatID).Int64("userId", from.ID).Msg("button press without a command ignored")
		a.answerCallback(q.ID, "")
		return
	}
	req := dispatch.RequestContext{
		Channel:         chat.ChannelTelegram,
		ChatID:          strconv.FormatInt(chatID, 10),
		ChatType:        m.Chat.Type,
		MessageThreadID: u.ThreadID,
		ChatKey:         chatKey(chatID, u.ThreadID, u.IsTopic),
		UserID:          strconv.FormatInt(from.ID, 10),
		Username:        displayName(from),
		MessageID:       strconv.Itoa(m.MessageID),
	}
	reply, ok := a.opts.Host.Command(ctx, name, args, req)
	if !ok {
		a.log.Debug().Str("chatKey", req.ChatKey).Str("command", name).Msg("button press with an unknown command")
		reply = ""
	}
	a.answerCallback(q.ID, reply)
}

// commandData reads a button's data as a command: "/approve 7KQ2MX" →
// "approve", "7KQ2MX". ok is false for data that is not one.
func commandData(data string) (name, args string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(data), "/")
	if !ok {
		return "", "", false
	}
	word, args, _ := strings.Cut(rest, " ")
	name, _, _ = strings.Cut(word, "@")
	name = strings.ToLower(name)
	return name, strings.TrimSpace(args), name != ""
}

// answerCallback answers press queryID with text ("" for none) as a short
// notice, in the background: like Intake's notes it goes through Workers,
// so the poll loop or webhook handler never waits on Telegram. Server and
// network errors are retried a few times; Telegram refusing the answer (the
// press is too old, say) is only logged.
func (a *Adapter) answerCallback(queryID, text string) {
	p := tgbotapi.Params{"callback_query_id": queryID}
	if text = truncate(text, maxAnswerChars); text != "" {
		p["text"] = text
	}
	limits := a.sender.limits
	a.workers.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, answerTimeout)
		defer cancel()
		for attempt := 1; ; attempt++ {
			_, err := a.api.call(ctx, "answerCallbackQuery", p)
			if err == nil {
				return
			}
			te, isAPI := apiError(err)
			wait := adapters.Jitter(limits.RetryBase << (attempt - 1))
			if isAPI && te.Code == http.StatusTooManyRequests {
				wait = time.Duration(max(te.RetryAfter, 1)) * time.Second
			}
			retry := !isAPI || te.Code == http.StatusTooManyRequests || te.Code >= 500
			if !retry || attempt >= limits.MaxAttempts || ctx.Err() != nil || !adapters.SleepCtx(ctx, wait) {
				a.log.Warn().Err(err).Str("callbackQueryId", queryID).Msg("answering a telegram button press failed")
				return
			}
		}
	})
}

// truncate cuts text to at most n characters, ending it with "…" when it
// was longer.
func truncate(text string, n int) string {
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)
	return string(r[:n-1]) + "…"
}
