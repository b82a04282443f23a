package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// maxWebhookBody bounds an update; real ones are a few KB.
const maxWebhookBody = 1 << 20

// secretHeader carries the secret_token given to setWebhook.
const secretHeader = "X-Telegram-Bot-Api-Secret-Token"

// runWebhook registers the webhook and waits for ctx; updates arrive via
// ServeHTTP. The webhook stays set at shutdown so Telegram keeps updates for
// the next start.
func (a *Adapter) runWebhook(ctx context.Context) error {
	url := a.opts.WebhookURL + WebhookPath
	for attempt := 0; ; attempt++ {
		_, err := a.api.call(ctx, "setWebhook", tgbotapi.Params{
			"url":             url,
			"secret_token":    a.opts.WebhookSecret,
			"allowed_updates": allowedUpdates,
		})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if te, ok := apiError(err); ok && te.Code == http.StatusBadRequest {
			a.status.Set(chat.ChannelTelegram, "failed", te.Message)
			return errors.New("telegram refused the webhook URL " + url + ": " + te.Message)
		}
		a.status.Set(chat.ChannelTelegram, "reconnecting", err.Error())
		if !adapters.SleepCtx(ctx, adapters.Backoff(attempt)) {
			return nil
		}
	}
	a.status.Set(chat.ChannelTelegram, "running", "webhook at "+url)
	a.log.Info().Str("url", url).Msg("telegram webhook set")
	<-ctx.Done()
	a.status.Set(chat.ChannelTelegram, "stopped", "")
	return nil
}

// ServeHTTP takes webhook calls. A request without the secret gets 401 and
// changes nothing. The update is recorded (and queued) before the 200, and
// the model never runs inside the request.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.secretOK(r.Header.Get(secretHeader)) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	case !utf8.Valid(body):
		http.Error(w, "body is not valid UTF-8", http.StatusBadRequest)
		return
	}
	if !json.Valid(body) {
		http.Error(w, "body is not JSON", http.StatusBadRequest)
		return
	}
	switch err := a.handleUpdate(r.Context(), body); {
	case errors.Is(err, errNotReady):
		http.Error(w, "starting", http.StatusServiceUnavailable)
	case err != nil:
		// Telegram retries a failed delivery; that is what we want.
		a.log.Error().Err(err).Msg("recording a telegram webhook update failed")
		http.Error(w, "try again", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (a *Adapter) secretOK(got string) bool {
	want := sha256.Sum256([]byte(a.opts.WebhookSecret))
	have := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(want[:], have[:]) == 1
}
