package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EFeishu is the README's Feishu/Lark section as a new user runs it:
// the app's id and secret and the domain in the environment, nothing else
// (websocket mode, the default: no public address needed).
func TestE2EFeishu(t *testing.T) {
	t.Parallel()
	const secret = "e2e-feishu-app-secret-never-printed"
	lk, err := fakelark.Start(fakelark.Options{AppSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lk.Close)
	fake := startFake(t, nil)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake,
		"FEISHU_APP_ID="+lk.AppID(), "FEISHU_APP_SECRET="+secret, "FEISHU_DOMAIN="+lk.URL()))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := lk.WaitConnected(ctx); err != nil {
		t.Fatalf("ship never opened the Feishu websocket: %v", err)
	}

	// A one-to-one chat: the answer is a new message in the chat.
	if ack, err := lk.PushEvent(ctx, lk.P2PText("oc_p2p_e2e", "ou_ann", "hi from feishu")); err != nil || ack.Code != http.StatusOK {
		t.Fatalf("p2p event: ack %d %s, %v", ack.Code, ack.Payload, err)
	}
	// Replies are streamed (adapters.feishu.streaming is "auto"): a card
	// that ends showing the reply.
	shown := waitChat(ctx, t, lk, "oc_p2p_e2e", showsText("echo: hi from feishu"))
	if len(shown) != 1 || shown[0].ReplyTo != "" || lk.Sent()[0].Path != fakelark.PathCreate {
		t.Errorf("p2p chat shows %+v, want \"echo: hi from feishu\" created in oc_p2p_e2e", shown)
	}

	// A group message that @-mentions the bot: the answer replies to it.
	trigger := lk.GroupText("oc_group_e2e", "ou_bob", "@_user_1 hi from a group", lk.BotMention("@_user_1"))
	if ack, err := lk.PushEvent(ctx, trigger); err != nil || ack.Code != http.StatusOK {
		t.Fatalf("group event: ack %d %s, %v", ack.Code, ack.Payload, err)
	}
	shown = waitChat(ctx, t, lk, "oc_group_e2e", showsText("echo: hi from a group"))
	if len(shown) != 1 || shown[0].ReplyTo != trigger.MessageID {
		t.Errorf("group chat shows %+v, want \"echo: hi from a group\" replying to %s", shown, trigger.MessageID)
	}

	eventually(t, "/api/status listing feishu as running", func() bool {
		return strings.Contains(adapterStates(t, p), "feishu:running")
	})

	// SIGTERM closes the websocket: ship exits 0 (stop's hang guard is the
	// 10 s a service manager allows).
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, secret) {
			t.Error("the Feishu app secret appears in ship's output")
		}
	}
}

// TestE2EFeishuWebhookNeedsEncryptKey: webhook mode without an encrypt key
// is refused at start with a line that says what to set; with the key, a
// signed and encrypted event is answered and a forged one is refused.
func TestE2EFeishuWebhookNeedsEncryptKey(t *testing.T) {
	t.Parallel()
	const (
		secret     = "e2e-feishu-webhook-secret-never-printed"
		encryptKey = "e2e-feishu-encrypt-key-never-printed"
		verifyTok  = "e2e-feishu-verification-token"
	)
	lk, err := fakelark.Start(fakelark.Options{AppSecret: secret, VerificationToken: verifyTok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lk.Close)
	fake := startFake(t, nil)
	dir := initProject(t)
	creds := []string{"FEISHU_APP_ID=" + lk.AppID(), "FEISHU_APP_SECRET=" + secret, "FEISHU_DOMAIN=" + lk.URL(),
		"FEISHU_MODE=webhook", "FEISHU_VERIFICATION_TOKEN=" + verifyTok}

	// Without FEISHU_ENCRYPT_KEY: refused, one line naming it.
	_, errOut, code := runShip(t, modelEnv(fake, creds...), "start", dir, "--port", strconv.Itoa(freePort(t)))
	line := strings.TrimRight(errOut, "\n")
	if code == 0 || line == "" || strings.Contains(line, "\n") || !strings.Contains(line, "FEISHU_ENCRYPT_KEY") {
		t.Errorf("webhook mode without an encrypt key: exit %d, stderr %q; want a non-zero exit and one line naming FEISHU_ENCRYPT_KEY", code, errOut)
	}
	if strings.Contains(errOut, secret) {
		t.Error("the Feishu app secret appears in the refusal")
	}

	// With the key: the webhook is served on ship's own port.
	p := startShip(t, dir, modelEnv(fake, append(creds, "FEISHU_ENCRYPT_KEY="+encryptKey)...))
	eventually(t, "/api/status listing feishu as running", func() bool {
		return strings.Contains(adapterStates(t, p), "feishu:running")
	})
	hook := p.url + "/webhook/feishu"
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	// A call signed and encrypted with another key is refused and never
	// reaches the model. It goes first, into the same chat as the genuine
	// one: had it been taken, it would be answered before it.
	forged := lk.P2PText("oc_hook_e2e", "ou_mallory", "forged question")
	status, body, err := lk.DeliverWebhook(ctx, hook, "guessed-encrypt-key", forged)
	if err != nil || status != http.StatusUnauthorized {
		t.Errorf("forged call: %d %s, %v; want 401", status, body, err)
	}
	genuine := lk.P2PText("oc_hook_e2e", "ou_ann", "hi from a webhook")
	status, body, err = lk.DeliverWebhook(ctx, hook, encryptKey, genuine)
	if err != nil || status != http.StatusOK {
		t.Fatalf("genuine call: %d %s, %v; want 200", status, body, err)
	}
	waitChat(ctx, t, lk, "oc_hook_e2e", showsText("echo: hi from a webhook"))
	if n := len(lk.Sent()); n != 1 {
		t.Errorf("%d messages sent, want only the genuine call's reply: %+v", n, lk.Sent())
	}
	if slices.ContainsFunc(fake.Requests(), func(r fakeopenai.Request) bool {
		return strings.Contains(r.LastUser(), "forged")
	}) {
		t.Error("the forged call reached the model")
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, secret) || strings.Contains(out, encryptKey) {
			t.Error("the Feishu app secret or encrypt key appears in ship's output")
		}
	}
}

// adapterStates is GET /api/status's adapters as "name:state" words.
func adapterStates(t *testing.T, p *shipProc) string {
	t.Helper()
	var status struct {
		Adapters []struct{ Name, State string } `json:"adapters"`
	}
	r := p.do(t, "GET", "/api/status", "")
	if err := json.Unmarshal(r.body, &status); err != nil {
		t.Fatalf("/api/status: %d %q: %v", r.status, r.body, err)
	}
	return fmtAdapters(status.Adapters)
}
