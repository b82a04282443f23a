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
	"github.com/shipmyagent/ship/adapters/markdown"
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

// SendButtons sends text with inline buttons into req's chat and topic,
// through the same paced and retried path as SendText (a reply to req's
// message in groups). The text is the model's Markdown, rendered like a
// reply (entities; a configured parse_mode takes it as written). A press
// arrives as a callback_query whose data, Button.Data, handleCallback runs
// as a command. The message is never split, since its buttons belong to
// all of it: text over MaxMessageChars is cut short with "…", its entities
// cut with it.
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
	part := a.sender.buttonText(text)
	if isApproval(buttons) {
		// An approval request shows the call that would run exactly as
		// asked: Markdown in a command (a backtick, "*", "[x](y)") must not
		// turn part of it into formatting that hides characters.
		part = markdown.Part{Text: truncate(text, MaxMessageChars)}
	}
	if _, err := a.sender.sendID(ctx, chatID, threadID, replyTo, group, part, markup); err != nil {
		return fmt.Errorf("sending buttons: %w", err)
	}
	return nil
}

// isApproval reports buttons of a tool approval request ("/approve CODE").
func isApproval(buttons []dispatch.Button) bool {
	for _, b := range buttons {
		if name, _, ok := adapters.ButtonCommand(b.Data); ok && (name == "approve" || name == "deny") {
			return true
		}
	}
	return false
}

// buttonText renders the text of a message with buttons as one message:
// cut to MaxMessageChars with "…" when longer.
func (s *sender) buttonText(text string) markdown.Part {
	if s.parseMode == "" {
		plain, ents := markdown.Telegram(text)
		if plain != "" {
			if utf16Len(plain) <= MaxMessageChars {
				return markdown.Part{Text: plain, Entities: ents}
			}
			// Split keeps every entity whole within the part; the "…"
			// after it is plain.
			p := markdown.Split(plain, ents, MaxMessageChars-1)[0]
			p.Text += "…"
			return p
		}
	}
	return markdown.Part{Text: truncate(text, MaxMessageChars)}
}

// oneRowButtons and oneRowChars say what fits side by side on a phone:
// up to three short buttons share a row, longer ones get a row each.
const (
	oneRowButtons = 3
	oneRowChars   = 30
)

// inlineKeyboard is the reply_markup for buttons: one row when up to three
// short labels fit side by side, else one button per row, so that no label
// is cut; each button's callback_data is its Data.
func inlineKeyboard(buttons []dispatch.Button) (string, error) {
	if len(buttons) == 0 {
		return "", errors.New("telegram: sending buttons: no buttons")
	}
	type button struct {
		Text         string `json:"text"`
		CallbackData string `json:"callback_data"`
	}
	row := make([]button, 0, len(buttons))
	chars := 0
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
		chars += utf8.RuneCountInString(b.Text)
		row = append(row, button{Text: b.Text, CallbackData: b.Data})
	}
	rows := [][]button{row}
	if len(row) > oneRowButtons || chars > oneRowChars {
		rows = rows[:0]
		for _, b := range row {
			rows = append(rows, []button{b})
		}
	}
	raw, err := json.Marshal(map[string][][]button{"inline_keyboard": rows})
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
	name, args, ok := adapters.ButtonCommand(q.Data)
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
	if ok && questionClosed(name, reply) {
		a.closeKeyboard(chatID, int64(m.MessageID))
	}
}

// questionClosed reports whether the core's reply to a press on a
// question's button ("/answer QID n") says the question takes no more
// answers: answered now, answered before, or expired.
func questionClosed(command, reply string) bool {
	if command != "answer" {
		return false
	}
	for _, p := range []string{"Answered:", "Already answered", "This question expired"} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}

// closeKeyboard removes the buttons of a question that is closed, in the
// background, so that everyone in the chat sees it takes no more answers
// (editMessageReplyMarkup without reply_markup). The edit spends the
// group's budget like any post; a failure is only logged, since the core
// refuses further answers anyway.
func (a *Adapter) closeKeyboard(chatID, messageID int64) {
	p := tgbotapi.Params{"chat_id": strconv.FormatInt(chatID, 10), "message_id": strconv.FormatInt(messageID, 10)}
	a.workers.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, answerTimeout)
		defer cancel()
		if err := a.sender.call(ctx, chatID, "editMessageReplyMarkup", p, true); err != nil {
			a.log.Warn().Err(err).Int64("chatId", chatID).Int64("messageId", messageID).Msg("removing the buttons of an answered question failed")
		}
	})
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
