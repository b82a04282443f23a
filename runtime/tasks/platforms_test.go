package tasks

import (
	"context"
	"testing"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/ingress"
)

// noHost is a Host for adapters that are built but never run: the tests
// ask them only how they route.
type noHost struct{}

func (noHost) Accept(context.Context, ingress.Submission) (ingress.Ticket, error) {
	return ingress.Ticket{}, nil
}
func (noHost) Record(context.Context, ingress.Submission) error { return nil }
func (noHost) Position(string) (int, bool)                      { return 0, false }
func (noHost) Command(context.Context, string, string, dispatch.RequestContext) (string, bool) {
	return "", false
}

var _ adapters.Host = noHost{}

// platforms is a registry of the real Telegram, Feishu and QQ adapters,
// built but not run, as cmd/ship registers them: the scheduler's routes
// follow each platform's own rules.
func platforms(t *testing.T) *dispatch.Registry {
	t.Helper()
	tg, err := telegram.New(telegram.Options{Token: "1:t", APIBase: "http://127.0.0.1:1", Host: noHost{}})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := feishu.New(feishu.Options{AppID: "a", AppSecret: "s", Domain: "http://127.0.0.1:1", Host: noHost{}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := qq.New(qq.Options{AppID: "a", AppSecret: "s", APIBase: "http://127.0.0.1:1", TokenBase: "http://127.0.0.1:1", Host: noHost{}})
	if err != nil {
		t.Fatal(err)
	}
	reg := dispatch.NewRegistry()
	for _, a := range []adapters.Adapter{tg, fs, q} {
		reg.Register(a.Name(), a)
	}
	return reg
}
