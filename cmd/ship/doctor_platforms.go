package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/config"
)

// ctxTransport gives every request of a client that takes no context (the
// Bot API client) the doctor's deadline.
type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(r.WithContext(t.ctx))
}

// pollProbeSeconds is how long the probe for another poller holds: long
// enough for a poller it interrupts to poll again (and so interrupt it).
const pollProbeSeconds = "2"

// checkTelegram checks the bot token with getMe (go-telegram-bot-api, as
// the adapter), then the webhook with getWebhookInfo, then whether another
// process polls the bot.
func checkTelegram(ctx context.Context, tc config.TelegramConfig, client *http.Client) []checkResult {
	base := strings.TrimRight(tc.APIBase, "/")
	if base == "" {
		base = telegram.DefaultAPIBase
	}
	hc := &http.Client{Transport: ctxTransport{ctx, client.Transport}}
	bot, err := tgbotapi.NewBotAPIWithClient(tc.BotToken, base+"/bot%s/%s", hc)
	if err != nil {
		return []checkResult{telegramFailure("telegram", err)}
	}
	out := []checkResult{pass("telegram", fmt.Sprintf("token accepted: bot @%s (id %d)", bot.Self.UserName, bot.Self.ID))}

	var info struct {
		URL              string `json:"url"`
		PendingUpdates   int    `json:"pending_update_count"`
		LastErrorMessage string `json:"last_error_message"`
	}
	resp, err := bot.MakeRequest("getWebhookInfo", nil)
	if err == nil {
		err = json.Unmarshal(resp.Result, &info)
	}
	if err != nil {
		return append(out, telegramFailure("telegram webhook", err))
	}
	polling := tc.Mode != telegram.ModeWebhook
	want := strings.TrimRight(tc.WebhookURL, "/") + telegram.WebhookPath
	switch {
	case polling && info.URL != "":
		// ship start calls deleteWebhook before it polls (getUpdates is
		// refused while a webhook is set): say so, since whatever
		// receives that webhook stops receiving.
		return append(out, warn("telegram webhook", fmt.Sprintf("a webhook is set (%s) but ship polls: ship start deletes it", hostOf(info.URL)),
			"nothing, if this bot is ship's alone; if another service receives its updates at that webhook, give ship a bot of its own"))
	case !polling && info.URL != want:
		out = append(out, warn("telegram webhook", fmt.Sprintf("Telegram posts to %q, ship's webhook is %q: ship start sets it", info.URL, want),
			"nothing, if this bot is ship's alone"))
	case !polling && info.LastErrorMessage != "":
		out = append(out, warn("telegram webhook", "Telegram's last delivery to the webhook failed: "+info.LastErrorMessage,
			"make "+want+" reachable from the internet over https (a valid certificate, port 443, 80, 88 or 8443)"))
	case !polling:
		out = append(out, pass("telegram webhook", fmt.Sprintf("set to ship's webhook, %d updates pending", info.PendingUpdates)))
	}
	if !polling {
		return out
	}

	// Another poller. The probe must not confirm anything: per the Bot
	// API (https://core.telegram.org/bots/api#getupdates) "an update is
	// considered confirmed as soon as getUpdates is called with an offset
	// higher than its update_id", and a negative offset makes "all
	// previous updates ... forgotten". So no offset at all ("by default,
	// updates starting with the earliest unconfirmed update are
	// returned", nothing confirmed), limit 1, and no allowed_updates
	// ("if not specified, the previous setting will be used"). Telegram
	// lets one getUpdates run per bot: the newer call ends the older one
	// with 409 "terminated by other getUpdates request". The probe ends a
	// poller's long poll; a poller that polls again within the probe's
	// hold ends the probe with 409, which is what is detected (a running
	// ship is such a poller, and simply polls again).
	_, err = bot.MakeRequest("getUpdates", tgbotapi.Params{"limit": "1", "timeout": pollProbeSeconds})
	var te *tgbotapi.Error
	switch {
	case errors.As(err, &te) && te.Code == http.StatusConflict:
		out = append(out, warn("telegram polling", "another process polls this bot (409 Conflict: "+te.Message+")",
			"if ship is not already running with this token, stop the other program: two pollers take each other's messages"))
	case err != nil:
		out = append(out, telegramFailure("telegram polling", err))
	default:
		out = append(out, pass("telegram polling", fmt.Sprintf("no other process polls this bot (%d updates waiting)", info.PendingUpdates)))
	}
	return out
}

// telegramFailure explains a failed Bot API call.
func telegramFailure(check string, err error) checkResult {
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		switch te.Code {
		case http.StatusUnauthorized, http.StatusNotFound:
			// The Bot API answers 401 for a revoked or mistyped token and
			// 404 for one that is not a token at all.
			return fail(check, fmt.Sprintf("TELEGRAM_BOT_TOKEN is refused by Telegram (%d %s)", te.Code, te.Message),
				"copy the token again from @BotFather (/mybots → API Token) into TELEGRAM_BOT_TOKEN")
		case http.StatusTooManyRequests:
			return warn(check, fmt.Sprintf("Telegram asks to wait %d s (429)", te.RetryAfter), "run ship doctor again later")
		}
		return fail(check, fmt.Sprintf("Telegram answered %d: %s", te.Code, te.Message), "see the Bot API's description above")
	}
	return fail(check, "cannot reach the Bot API: "+transportCause(err).Error(),
		"check this machine's network (and TELEGRAM_API_BASE if set)")
}
