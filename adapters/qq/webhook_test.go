package qq_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeqq"
)

func TestWebhookRejectsABadSignatureAndAnswersASignedEvent(t *testing.T) {
	e := newEnv(t, setup{noStart: true, opts: func(o *qq.Options) { o.Mode = qq.ModeWebhook }})
	url := newWebhookServer(t, e.adapter)
	e.start()
	e.until("the webhook to be ready", func() bool { return e.adapter.Status().State == "running" })

	forged := e.qq.GroupAt("G1", "M1", "forged")
	status, _, err := e.qq.DeliverWebhook(e.ctx(), url, "not-the-app-secret-at-all", forged)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("forged event: %d %v, want 401", status, err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"op":0,"t":"C2C_MESSAGE_CREATE","d":{}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned event: %d, want 401", resp.StatusCode)
	}
	if es := e.entries("qq:group:G1"); len(es) != 0 {
		t.Fatalf("a forged event changed the log: %+v", es)
	}

	real := e.qq.GroupAt("G1", "M1", "a real question")
	status, body, err := e.qq.DeliverWebhook(e.ctx(), url, appSecret, real)
	if err != nil || status != http.StatusOK || string(body) != `{"d":0,"op":12}` {
		t.Fatalf("signed event: %d %s %v", status, body, err)
	}
	s := e.waitSent(1)[0]
	if s.Content != "echo: a real question" || s.MsgID != real.MessageID || s.Path != fakeqq.GroupPath("G1") {
		t.Fatalf("webhook reply %+v", s)
	}
	if n := e.model.RequestCount(); n != 1 {
		t.Errorf("model called %d times, want 1: the forged event ran", n)
	}

	// QQ retries a delivery it is unsure of: answered, not run again.
	if status, _, err := e.qq.DeliverWebhook(e.ctx(), url, appSecret, real); err != nil || status != http.StatusOK {
		t.Fatalf("re-delivery: %d %v", status, err)
	}
	e.idle()
	if n := len(e.qq.Sent()); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}

	if err := e.qq.ValidateWebhook(e.ctx(), url, appSecret); err != nil {
		t.Errorf("callback address validation: %v", err)
	}
}
