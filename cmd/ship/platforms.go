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
	"github.com/shipmyagent/ship/runtime/engine"
)

// webhookAdapter is a platform that can take its events over HTTP.
type webhookAdapter interface {
	adapters.Adapter
	http.Handler
}

// newAdapters builds every enabled platform adapter, registers each as its
// channel's dispatcher, and returns them with the webhook routes they serve
// on ship's HTTP server.
func newAdapters(cfg config.Config, eng *engine.Engine, log zerolog.Logger) ([]adapters.Adapter, map[string]http.Handler, error) {
	type platform struct {
		on      bool
		webhook bool
		path    string
		build   func() (webhookAdapter, error)
	}
	a := cfg.Adapters
	platforms := []platform{
		{a.Telegram.On(), a.Telegram.Mode == telegram.ModeWebhook, telegram.WebhookPath,
			func() (webhookAdapter, error) { return telegram.FromConfig(cfg, eng, log) }},
		{a.Feishu.On(), a.Feishu.Mode == feishu.ModeWebhook, feishu.WebhookPath,
			func() (webhookAdapter, error) { return feishu.FromConfig(cfg, eng, log) }},
		{a.QQ.On(), a.QQ.Mode == qq.ModeWebhook, qq.WebhookPath,
			func() (webhookAdapter, error) { return qq.FromConfig(cfg, eng, log) }},
	}
	var out []adapters.Adapter
	webhooks := map[string]http.Handler{}
	for _, p := range platforms {
		if !p.on {
			continue
		}
		ad, err := p.build()
		if err != nil {
			return nil, nil, err
		}
		eng.Register(ad.Name(), ad)
		out = append(out, ad)
		if p.webhook {
			webhooks["POST "+p.path] = ad
		}
	}
	return out, webhooks, nil
}

// runAdapters runs each adapter until ctx ends; the returned channel closes
// when all have returned. An adapter that gives up is logged; ship keeps
// serving the others and the API.
// Every replica runs every adapter (sends, webhooks, typing, token
// refresh); in cluster mode only its single long connection waits for the
// connection's lease (rep.gate).
func runAdapters(ctx context.Context, list []adapters.Adapter, rep *replica, log zerolog.Logger) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, a := range list {
		a.GateConnection(rep.gate())
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
