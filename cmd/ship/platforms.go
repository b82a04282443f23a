package main

import (
	"context"
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/config"
)

// newAdapters builds every enabled platform adapter and the webhook routes
// they serve on ship's HTTP server.
func newAdapters(cfg config.Config, engine *adapters.Engine, model string, log zerolog.Logger) ([]adapters.Adapter, map[string]http.Handler, error) {
	var out []adapters.Adapter
	webhooks := map[string]http.Handler{}
	commands := &adapters.Commands{Engine: engine, Model: model}
	if tc := cfg.Adapters.Telegram; tc.On() {
		a, err := telegram.New(telegram.Options{
			Token:          tc.BotToken,
			APIBase:        tc.APIBase,
			Mode:           tc.Mode,
			WebhookURL:     tc.WebhookURL,
			WebhookSecret:  tc.WebhookSecret,
			RequireMention: tc.RequireMention == nil || *tc.RequireMention,
			AllowedChatIDs: tc.AllowedChatIDs,
			AllowedUserIDs: tc.AllowedUserIDs,
			BusyNote:       tc.BusyNote == nil || *tc.BusyNote,
			ParseMode:      tc.ParseMode,
			CacheDir:       cfg.StatePath(".cache", "telegram"),
			Engine:         engine,
			Commands:       commands,
			Logger:         log,
		})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
		if tc.Mode == telegram.ModeWebhook {
			webhooks["POST "+telegram.WebhookPath] = a
		}
	}
	if fc := cfg.Adapters.Feishu; fc.On() {
		a, err := feishu.New(feishu.Options{
			AppID:             fc.AppID,
			AppSecret:         fc.AppSecret,
			Domain:            fc.Domain,
			Mode:              fc.Mode,
			VerificationToken: fc.VerificationToken,
			EncryptKey:        fc.EncryptKey,
			BusyNote:          fc.BusyNote == nil || *fc.BusyNote,
			CacheDir:          cfg.StatePath(".cache", "feishu"),
			Engine:            engine,
			Commands:          commands,
			Logger:            log,
		})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
		if fc.Mode == feishu.ModeWebhook {
			webhooks["POST "+feishu.WebhookPath] = a
		}
	}
	if qc := cfg.Adapters.QQ; qc.On() {
		a, err := qq.New(qq.Options{
			AppID:         qc.AppID,
			AppSecret:     qc.AppSecret,
			Sandbox:       qc.Sandbox,
			APIBase:       qc.APIBase,
			TokenBase:     qc.TokenBase,
			Mode:          qc.Mode,
			WebhookSecret: qc.WebhookSecret,
			Intents:       qc.Intents,
			BusyNote:      qc.BusyNote == nil || *qc.BusyNote,
			Engine:        engine,
			Commands:      commands,
			Logger:        log,
		})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, a)
		if qc.Mode == qq.ModeWebhook {
			webhooks["POST "+qq.WebhookPath] = a
		}
	}
	return out, webhooks, nil
}

// runAdapters runs each adapter until ctx ends; the returned channel closes
// when all have returned. An adapter that gives up is logged; ship keeps
// serving the others and the API.
func runAdapters(ctx context.Context, list []adapters.Adapter, log zerolog.Logger) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, a := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.Run(ctx); err != nil {
				log.Error().Err(err).Str("channel", a.Name()).Msg("adapter stopped")
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return done
}
