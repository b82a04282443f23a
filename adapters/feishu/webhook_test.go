package feishu_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/internal/fakelark"
)

func TestWebhookRefusesForgedCallsAndAnswersGenuineOnes(t *testing.T) {
	e := newEnv(t, setup{mode: feishu.ModeWebhook})
	e.waitRunning()
	lk := e.lk

	// URL verification: Feishu does not sign it; it must decrypt.
	body, _ := fakelark.EncryptedBody(encryptKey, lk.URLVerification("c-42"))
	status, answer := post(t, e.hookURL, body, nil)
	if status != http.StatusOK || !strings.Contains(answer, `"challenge":"c-42"`) {
		t.Fatalf("url_verification: %d %s", status, answer)
	}

	forged := lk.P2PText("oc_w", "ou_mallory", "forged")
	plain := lk.EventJSON(forged)
	enc, _ := fakelark.EncryptedBody(encryptKey, plain)
	wrongKey, _ := fakelark.EncryptedBody("guessed-key", plain)
	signed := func(body []byte, key string, at time.Time) http.Header {
		req, _ := fakelark.WebhookRequest(e.ctx(), e.hookURL, key, body, at)
		return req.Header
	}
	badSig := signed(enc, encryptKey, time.Now())
	badSig.Set(fakelark.HeaderSignature, strings.Repeat("ab", 32))
	cases := []struct {
		name   string
		body   []byte
		header http.Header
	}{
		{"unsigned plaintext", plain, nil},
		{"unsigned encrypted event", enc, nil},
		{"bad signature", enc, badSig},
		{"signed and encrypted with another key", wrongKey, signed(wrongKey, "guessed-key", time.Now())},
		{"replayed nine hours later", enc, signed(enc, encryptKey, time.Now().Add(-9*time.Hour))},
		{"signed ten minutes in the future", enc, signed(enc, encryptKey, time.Now().Add(10*time.Minute))},
		{"plaintext signed with the right key", plain, signed(plain, encryptKey, time.Now())},
	}
	for _, c := range cases {
		if status, answer := post(t, e.hookURL, c.body, c.header); status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, status, answer)
		}
	}
	// A URL verification with the wrong token is refused too.
	other, _ := fakelark.EncryptedBody(encryptKey, []byte(`{"type":"url_verification","token":"nope","challenge":"x"}`))
	if status, _ := post(t, e.hookURL, other, nil); status != http.StatusUnauthorized {
		t.Errorf("url_verification with a wrong token: %d", status)
	}
	if es := e.entries("feishu:chat:oc_w"); len(es) != 0 {
		t.Fatalf("a forged call changed the log: %+v", es)
	}

	genuine := lk.P2PText("oc_w", "ou_ann", "real one")
	status, answer, err := lk.DeliverWebhook(e.ctx(), e.hookURL, encryptKey, genuine)
	if err != nil || status != http.StatusOK {
		t.Fatalf("genuine call: %d %s %v", status, answer, err)
	}
	if got := e.waitSent(1)[0].Text; got != "echo: real one" {
		t.Errorf("webhook reply %q", got)
	}
	// Feishu's retry of the same event (re-signed) changes nothing.
	if status, _, _ := lk.DeliverWebhook(e.ctx(), e.hookURL, encryptKey, genuine); status != http.StatusOK {
		t.Errorf("retried delivery: %d", status)
	}
	e.idle()
	if n, calls := len(lk.Sent()), e.model.RequestCount(); n != 1 || calls != 1 {
		t.Errorf("%d replies, %d model calls after a retried delivery; want 1 and 1", n, calls)
	}
	if es := e.entries("feishu:chat:oc_w"); len(es) != 2 || es[0].Text != "real one" {
		t.Errorf("chat log = %+v", es)
	}
}

// Feishu re-sends an event it could not deliver 15 s, 5 min, 1 h and 6 h
// later, and nothing says the retry is signed anew: a retry that carries
// the first delivery's timestamp, an hour old, is taken and handled once.
// A replay of it is harmless; a bad signature, a timestamp older than the
// retries go or one from the future is refused.
func TestWebhookTakesFeishusLateRetryOnce(t *testing.T) {
	e := newEnv(t, setup{mode: feishu.ModeWebhook, noStart: true})
	lk := e.lk
	firstSent := time.Now().Add(-time.Hour - 5*time.Minute)
	call, err := lk.NewWebhookCall(encryptKey, lk.P2PText("oc_r", "ou_ann", "still there?"), firstSent)
	if err != nil {
		t.Fatal(err)
	}
	// The first delivery finds ship down (starting): 503, Feishu retries.
	if status, answer, err := lk.Send(e.ctx(), e.hookURL, call); err != nil || status != http.StatusServiceUnavailable {
		t.Errorf("first delivery while starting: %d %s %v, want 503", status, answer, err)
	}
	e.start()
	e.waitRunning()
	if status, answer, err := lk.Send(e.ctx(), e.hookURL, call); err != nil || status != http.StatusOK {
		t.Fatalf("Feishu's retry an hour later: %d %s %v", status, answer, err)
	}
	if got := e.waitSent(1)[0].Text; got != "echo: still there?" {
		t.Errorf("reply %q", got)
	}
	// The same call again (Feishu's next retry, or a replay) changes nothing.
	if status, answer, _ := lk.Send(e.ctx(), e.hookURL, call); status != http.StatusOK {
		t.Errorf("the call sent again: %d %s", status, answer)
	}
	e.idle()
	if n, calls := len(lk.Sent()), e.model.RequestCount(); n != 1 || calls != 1 {
		t.Errorf("%d replies, %d model calls; want 1 and 1", n, calls)
	}

	refusedCall := func(name string, c fakelark.WebhookCall) {
		t.Helper()
		if status, answer, _ := lk.Send(e.ctx(), e.hookURL, c); status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, status, answer)
		}
	}
	forged := call
	forged.Header = call.Header.Clone()
	forged.Header.Set(fakelark.HeaderSignature, strings.Repeat("ab", 32))
	refusedCall("the retry with a bad signature", forged)
	for name, at := range map[string]time.Time{
		"signed nine hours ago":            time.Now().Add(-9 * time.Hour),
		"signed ten minutes from now":      time.Now().Add(10 * time.Minute),
		"signed long ago by a guessed key": time.Now().Add(-time.Hour),
	} {
		key := encryptKey
		if strings.Contains(name, "guessed") {
			key = "guessed-key"
		}
		c, err := lk.NewWebhookCall(key, lk.P2PText("oc_x", "ou_mallory", name), at)
		if err != nil {
			t.Fatal(err)
		}
		refusedCall(name, c)
	}
	if es := e.entries("feishu:chat:oc_x"); len(es) != 0 {
		t.Errorf("a refused call changed the log: %+v", es)
	}
	if es := e.entries("feishu:chat:oc_r"); len(es) != 2 {
		t.Errorf("chat log %+v, want the question and one reply", es)
	}
}

func post(t *testing.T, url string, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestWebhookModeNeedsAnEncryptKey(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	_, err := feishu.New(feishu.Options{
		AppID: "cli_x", AppSecret: appSecret, Mode: feishu.ModeWebhook,
		Host: e.engine,
	})
	if err == nil || !strings.Contains(err.Error(), "FEISHU_ENCRYPT_KEY") || strings.Contains(err.Error(), appSecret) {
		t.Fatalf("err = %v", err)
	}
}
