package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/renameio/v2"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// allowedUpdates are the update kinds ship asks for, in getUpdates and
// setWebhook alike (Telegram keeps the last list given): new messages, and
// presses of the bot's inline buttons (tool approvals). Edits are left
// out on purpose: a user who edits a question already answered would get a
// second answer to one message, and one who edits while the bot is still
// thinking could not tell which version was answered. An edit changes
// nothing; a corrected question is sent as a new message. (Edits created
// before the list changed may still arrive once: handleUpdate ignores them.)
const allowedUpdates = `["message","callback_query"]`

// poll runs the long-polling loop until ctx ends. The offset is saved only
// after every update of a batch is in the ChatStore, so a crash re-delivers
// at most that batch, and the front door's dedupe recognises what it had already taken.
// The gate may call it again after it returned: it starts from the saved
// offset each time (shared by the replicas in cluster mode).
func (a *Adapter) poll(ctx context.Context) error {
	a.status.Set(chat.ChannelTelegram, "starting", "starting the long poll")
	if _, err := a.api.call(ctx, "deleteWebhook", tgbotapi.Params{"drop_pending_updates": "false"}); err != nil && ctx.Err() == nil {
		a.log.Warn().Err(err).Msg("telegram deleteWebhook failed; getUpdates may be refused while a webhook is set")
	}
	offset, err := a.loadOffset(ctx)
	if err != nil {
		a.log.Warn().Err(err).Msg("telegram offset unreadable; starting from what Telegram still holds")
	}
	bot, _ := a.identity()
	a.status.Set(chat.ChannelTelegram, "running", "long polling as @"+bot.Username)
	a.log.Info().Int64("offset", offset).Msg("telegram long polling started")
	failures := 0
	for ctx.Err() == nil {
		raw, err := a.api.call(ctx, "getUpdates", tgbotapi.Params{
			"offset":          strconv.FormatInt(offset, 10),
			"timeout":         strconv.Itoa(int(a.opts.PollTimeout.Seconds())),
			"allowed_updates": allowedUpdates,
		})
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			failures++
			if te, ok := apiError(err); ok && te.Code == http.StatusConflict {
				a.log.Error().Str("description", te.Message).Msg("telegram: another instance polls with this token, or a webhook is set")
			} else {
				a.log.Warn().Err(err).Msg("telegram getUpdates failed; retrying")
			}
			a.status.Set(chat.ChannelTelegram, "reconnecting", err.Error())
			if !adapters.SleepCtx(ctx, adapters.Backoff(failures-1)) {
				break
			}
			continue
		}
		if failures > 0 {
			failures = 0
			a.status.Set(chat.ChannelTelegram, "running", "long polling as @"+bot.Username)
		}
		next, err := a.handleBatch(ctx, raw, offset)
		if next != offset {
			offset = next
			// Saved even when a stop (drain) came during the batch: what
			// is logged is confirmed, so the next poller, here after a
			// restart or on another replica, is not sent it again.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), offsetSaveTimeout)
			serr := a.saveOffset(sctx, offset)
			cancel()
			if serr != nil {
				a.log.Error().Err(serr).Msg("saving telegram offset; duplicates after a restart will be skipped by message id")
			}
		}
		if err != nil && ctx.Err() == nil {
			// The update could not be recorded: do not confirm it, so
			// Telegram sends it again.
			if errors.Is(err, ingress.ErrInFlight) {
				// Another replica (the last holder of this poll) claimed
				// it and has not settled it yet: ask again shortly.
				a.log.Info().Msg("a telegram update is still being taken by another replica; fetching it again")
			} else {
				a.log.Error().Err(err).Msg("recording a telegram update failed; it will be fetched again")
			}
			if !adapters.SleepCtx(ctx, adapters.Backoff(0)) {
				break
			}
		}
	}
	a.status.Set(chat.ChannelTelegram, "stopped", "")
	a.log.Info().Msg("telegram long polling stopped")
	return nil
}

// handleBatch handles updates in order and returns the offset that confirms
// every update handled; it stops at the first that could not be recorded.
func (a *Adapter) handleBatch(ctx context.Context, raw json.RawMessage, offset int64) (int64, error) {
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err != nil {
		return offset, fmt.Errorf("decoding getUpdates: %w", err)
	}
	for _, item := range batch {
		id, ok := updateID(item)
		if !ok {
			a.log.Warn().Int("bytes", len(item)).Msg("skipping a telegram update without a readable update_id")
			continue
		}
		if err := a.handleUpdate(ctx, item); err != nil {
			return offset, err
		}
		offset = id + 1
	}
	return offset, nil
}

// offsetSaveTimeout bounds saving the offset after a batch (in cluster
// mode a write to NATS).
const offsetSaveTimeout = 5 * time.Second

// offsetKey is the resume point the update offset is kept under when the
// processes share it (cluster mode): a decimal number, as ship has always
// stored it there, so replicas of different versions agree.
const offsetKey = "telegram"

// KeepResumePointsIn makes the adapter keep its update offset in p instead
// of CacheDir (adapters.Resumer): in cluster mode the replicas share it, so
// the one that takes the long poll over resumes where the last one stopped.
// Call it before Run.
func (a *Adapter) KeepResumePointsIn(p adapters.ResumePoints) { a.resume = p }

var _ adapters.Resumer = (*Adapter)(nil)

type offsetFile struct {
	Offset int64 `json:"offset"`
}

func (a *Adapter) offsetPath() string { return filepath.Join(a.opts.CacheDir, "offset.json") }

func (a *Adapter) loadOffset(ctx context.Context) (int64, error) {
	if a.resume != nil {
		return a.loadSharedOffset(ctx)
	}
	if a.opts.CacheDir == "" {
		return 0, nil
	}
	b, err := os.ReadFile(a.offsetPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading telegram offset: %w", err)
	}
	var f offsetFile
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, fmt.Errorf("reading telegram offset: %w", err)
	}
	return f.Offset, nil
}

// loadSharedOffset reads the offset the last holder of the poll saved (0
// when none).
func (a *Adapter) loadSharedOffset(ctx context.Context) (int64, error) {
	b, err := a.resume.Load(ctx, offsetKey)
	if err != nil || b == nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the shared telegram offset: %w", err)
	}
	return v, nil
}

// saveOffset replaces the offset file atomically (renameio: write, fsync,
// rename), so a crash leaves the old offset or the new one, never a torn one.
func (a *Adapter) saveOffset(ctx context.Context, offset int64) error {
	if a.resume != nil {
		return a.resume.Save(ctx, offsetKey, []byte(strconv.FormatInt(offset, 10)))
	}
	if a.opts.CacheDir == "" {
		return nil
	}
	if err := os.MkdirAll(a.opts.CacheDir, 0o700); err != nil {
		return fmt.Errorf("saving telegram offset: %w", err)
	}
	b, _ := json.Marshal(offsetFile{Offset: offset})
	if err := renameio.WriteFile(a.offsetPath(), b, 0o600); err != nil {
		return fmt.Errorf("saving telegram offset: %w", err)
	}
	return nil
}
