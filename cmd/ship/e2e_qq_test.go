package main_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeqq"
)

// TestE2EQQ is the README's QQ section as a new user runs it: the app's id
// and secret and the platform's base URLs in the environment, nothing else
// (websocket mode, the default).
func TestE2EQQ(t *testing.T) {
	t.Parallel()
	const (
		appID  = "102030405"
		secret = "e2e-qq-app-secret-never-printed-0123"
	)
	qq, err := fakeqq.Start(fakeqq.Options{
		AppID: appID, AppSecret: secret,
		// No heartbeat within the test: botgo's websocket client reads the
		// session's last seq for a heartbeat while another of its
		// goroutines writes it, a race inside botgo that the race-built
		// ship would report (adapters/qq/harness_test.go).
		HeartbeatInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qq.Close)
	fake := startFake(t, nil)
	dir := initProject(t)
	p := startShip(t, dir, modelEnv(fake,
		"QQ_APP_ID="+appID, "QQ_APP_SECRET="+secret, "QQ_API_BASE="+qq.URL(), "QQ_TOKEN_BASE="+qq.URL()))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := qq.WaitIdentified(ctx, 1); err != nil {
		t.Fatalf("ship never identified on the QQ gateway: %v", err)
	}

	// A group message that @-mentions the bot: a passive reply in the group.
	group := qq.PushGroupAt("G_E2E", "M_E2E", "hi from a qq group")
	sent, err := qq.WaitSent(ctx, 1)
	if err != nil {
		t.Fatalf("waiting for the group reply: %v (got %+v)", err, sent)
	}
	if s := sent[0]; s.Path != fakeqq.GroupPath("G_E2E") || s.MsgID != group.MessageID || s.Content != "echo: hi from a qq group" {
		t.Errorf("group reply %+v, want \"echo: hi from a qq group\" at %s replying to %s", s, fakeqq.GroupPath("G_E2E"), group.MessageID)
	}

	// A one-to-one (C2C) message: a passive reply to the user.
	c2c := qq.PushC2C("U_E2E", "hi from qq c2c")
	sent, err = qq.WaitSent(ctx, 2)
	if err != nil {
		t.Fatalf("waiting for the c2c reply: %v (got %+v)", err, sent)
	}
	if s := sent[1]; s.Path != fakeqq.C2CPath("U_E2E") || s.MsgID != c2c.MessageID || s.Content != "echo: hi from qq c2c" {
		t.Errorf("c2c reply %+v, want \"echo: hi from qq c2c\" at %s replying to %s", s, fakeqq.C2CPath("U_E2E"), c2c.MessageID)
	}

	eventually(t, "/api/status listing qq as running", func() bool {
		return strings.Contains(adapterStates(t, p), "qq:running")
	})

	// SIGTERM stops the gateway loop: ship exits 0 (stop's hang guard is
	// the 10 s a service manager allows).
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, out := range []string{p.stdout.String(), p.stderr.String()} {
		if strings.Contains(out, secret) {
			t.Error("the QQ app secret appears in ship's output")
		}
	}
}
