package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakemcp"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
)

// doctorCheck is one object of `ship doctor --json`.
type doctorCheck struct {
	Check, Level, Detail, Fix string
	OK                        bool
}

// doctorWorld is every service ship talks to, faked, with the secrets
// that open them.
type doctorWorld struct {
	env     []string
	secrets []string
	dir     string
}

const (
	docTelegramToken = "424242:AAHq8ZxV2Lp9Tr4Wm7Ky3NbQd"
	docLarkSecret    = "LkS3cRt9XvQ2mN8pZ4wY7jH"
	docQQAppID       = "10203040"
	docQQSecret      = "Qq5Tz8Wm2Xv7Nb4Kp9Ld3Hj6Rs1Gf0Ae"
	docModelKey      = "sk-Mk7Tq2Zx9Vb4Np8Lw3Hy6Jd"
	docClaudeKey     = "sk-ant-Ck4Rw8Tz2Qx7Vm3Bn9Pj"
	docNATSToken     = "NtK9Zq3Xw7Vb2Mp8Ly4Hs"
)

func newDoctorWorld(t *testing.T) doctorWorld {
	t.Helper()
	tg := startTelegram(t, docTelegramToken)
	lk, err := fakelark.Start(fakelark.Options{AppSecret: docLarkSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lk.Close)
	qq, err := fakeqq.Start(fakeqq.Options{AppID: docQQAppID, AppSecret: docQQSecret, HeartbeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qq.Close)
	oa, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{APIKey: docModelKey, Models: []string{"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oa.Close)
	an, err := fakeanthropic.StartWithOptions(nil, fakeanthropic.Options{APIKey: docClaudeKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(an.Close)
	bin, err := fakemcp.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nats := startExportNATS(t, docNATSToken)

	dir := initProject(t)
	addToShipJSON(t, dir, map[string]any{
		"llm": map[string]any{"models": map[string]any{"claude": map[string]any{
			"provider": "anthropic", "model": "claude-sonnet-4-5", "baseUrl": an.BaseURL(), "apiKey": "${CLAUDE_KEY}"}}},
		"mcp": map[string]any{"servers": map[string]any{"local": map[string]any{"command": bin}}},
	})
	env := append(modelEnv(oa), telegramEnv(tg, docTelegramToken)...)
	env = append(env, "FEISHU_APP_ID="+lk.AppID(), "FEISHU_APP_SECRET="+docLarkSecret, "FEISHU_DOMAIN="+lk.URL(),
		"QQ_APP_ID="+docQQAppID, "QQ_APP_SECRET="+docQQSecret, "QQ_API_BASE="+qq.URL(), "QQ_TOKEN_BASE="+qq.URL(),
		"CLAUDE_KEY="+docClaudeKey, "SHIP_NATS_URL="+nats.ClientURL(), "SHIP_NATS_TOKEN="+docNATSToken)
	env = replaceEnv(env, "LLM_API_KEY", docModelKey)
	return doctorWorld{env: env, dir: dir,
		secrets: []string{docTelegramToken, docLarkSecret, docQQSecret, docModelKey, docClaudeKey, docNATSToken}}
}

// replaceEnv sets key=value in env, replacing an earlier value.
func replaceEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// noSecrets fails the test if any secret, or any 6-character piece of
// one, shows in out (OpenAI's 401 quotes a key's first and last
// characters; a report must not).
func noSecrets(t *testing.T, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		for i := 0; i+6 <= len(s); i++ {
			if piece := s[i : i+6]; strings.Contains(out, piece) {
				t.Errorf("output shows %q, a piece of a secret:\n%s", piece, out)
				break
			}
		}
	}
}

func doctorJSON(t *testing.T, stdout string) map[string]doctorCheck {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("--json output is not a JSON array: %v\n%s", err, stdout)
	}
	out := map[string]doctorCheck{}
	for _, obj := range list {
		for _, k := range []string{"check", "ok", "level", "detail", "fix"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("object %v has no %q", obj, k)
			}
		}
		r := doctorCheck{Check: obj["check"].(string), OK: obj["ok"].(bool), Level: obj["level"].(string),
			Detail: obj["detail"].(string), Fix: obj["fix"].(string)}
		out[r.Check] = r
	}
	return out
}

// Against services that accept everything, every check passes: exit 0.
func TestDoctorPassesAgainstTheFakes(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t)
	stdout, stderr, code := runShip(t, w.env, "doctor", w.dir, "--json")
	if code != 0 {
		t.Fatalf("ship doctor: exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := doctorJSON(t, stdout)
	for _, check := range []string{"config", "state", "telegram", "telegram polling", "feishu", "feishu bot",
		"qq", "qq gateway", "model default", "model claude", "mcp local", "cluster"} {
		r, ok := got[check]
		if !ok {
			t.Errorf("no %q check in %s", check, stdout)
			continue
		}
		if r.Level != "ok" || !r.OK {
			t.Errorf("%s: %+v, want ok", check, r)
		}
	}
	if d := got["telegram"].Detail; !strings.Contains(d, "@ship_test_bot") {
		t.Errorf("telegram detail %q does not name the bot", d)
	}
	if d := got["mcp local"].Detail; !strings.Contains(d, "tools") {
		t.Errorf("mcp detail %q", d)
	}
	noSecrets(t, stdout+stderr, w.secrets)

	// The same as lines.
	stdout, _, code = runShip(t, w.env, "doctor", w.dir)
	if code != 0 || !strings.Contains(stdout, "✓ telegram: token accepted: bot @ship_test_bot") {
		t.Errorf("exit %d, lines:\n%s", code, stdout)
	}
}

// Wrong credentials: exit 1, each line names the platform, the variable
// and the fix, and no secret (not even part of one) is printed.
func TestDoctorWrongTokensNamePlatformAndFix(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t)
	wrong := map[string]string{
		"TELEGRAM_BOT_TOKEN": "424242:AAWr0ngT0kEnQz8Xv2Lp9",
		"FEISHU_APP_SECRET":  "Wl7Kx3Zq9Vm2Tb8Np4",
		"QQ_APP_SECRET":      "Wq4Zx8Tm2Vb7Nk3Lp9Hd5Rs1Gf6Ae0Jc",
		"LLM_API_KEY":        "sk-Wm3Qz7Xv2Lb9Tk4Np8",
	}
	env := w.env
	secrets := w.secrets
	for k, v := range wrong {
		env = replaceEnv(env, k, v)
		secrets = append(secrets, v)
	}
	stdout, stderr, code := runShip(t, env, "doctor", w.dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"✗ telegram: TELEGRAM_BOT_TOKEN is refused by Telegram (401 Unauthorized) — fix: copy the token again from @BotFather",
		"✗ feishu: FEISHU_APP_ID / FEISHU_APP_SECRET are refused by Feishu (code 10014",
		"✗ qq: QQ_APP_ID / QQ_APP_SECRET are refused by QQ",
		"✗ model default: LLM_API_KEY (llm.apiKey) is refused by 127.0.0.1",
		"✓ model claude:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no line with %q in:\n%s", want, stdout)
		}
	}
	noSecrets(t, stdout+stderr, secrets)
}

// An MCP server that cannot start is named, with the fix, and fails the
// run.
func TestDoctorNamesTheMCPServerThatFails(t *testing.T) {
	t.Parallel()
	fake, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{Models: []string{"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	dir := initProject(t)
	addToShipJSON(t, dir, map[string]any{
		"mcp": map[string]any{"servers": map[string]any{"broken": map[string]any{"command": "/nonexistent/mcp-server"}}},
	})
	stdout, stderr, code := runShip(t, modelEnv(fake), "doctor", dir, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	r := doctorJSON(t, stdout)["mcp broken"]
	if r.OK || r.Level != "fail" || !strings.Contains(r.Detail, "failed to start") || !strings.Contains(r.Fix, "mcp.servers.broken") {
		t.Errorf("mcp broken: %+v", r)
	}
}

// Another program polling the same bot is seen (and warned about, not
// failed: a running ship polls too).
func TestDoctorSeesAnotherPoller(t *testing.T) {
	t.Parallel()
	tg := startTelegram(t, docTelegramToken)
	fake, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{Models: []string{"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { // the other poller: long polls, again and again
		defer close(done)
		u := tg.URL() + "/bot" + docTelegramToken + "/getUpdates?timeout=30&" + url.Values{"offset": {"0"}}.Encode()
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
	}()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatal(err)
	}
	dir := initProject(t)
	stdout, stderr, code := runShip(t, append(modelEnv(fake), telegramEnv(tg, docTelegramToken)...), "doctor", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (a warning)\n%s\n%s", code, stdout, stderr)
	}
	r := doctorJSON(t, stdout)["telegram polling"]
	if r.Level != "warn" || !strings.Contains(r.Detail, "another process polls this bot (409 Conflict") {
		t.Errorf("telegram polling: %+v", r)
	}
}

// `ship init --telegram` then start without TELEGRAM_BOT_TOKEN: start
// refuses with the one-line fix (it used to run without Telegram, silently).
func TestStartRefusesAPlatformWithoutItsToken(t *testing.T) {
	t.Parallel()
	dir := initProject(t)
	if _, errOut, code := runShip(t, baseEnv(), "init", dir, "--force", "--provider", "offline", "--telegram"); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	_, stderr, code := runShip(t, baseEnv(), "start", dir)
	want := "ship.json sets up Telegram (adapters.telegram) but TELEGRAM_BOT_TOKEN is not set — fix: put TELEGRAM_BOT_TOKEN in .env"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
	// Switched off explicitly, it starts... as far as the config goes:
	// doctor agrees.
	addToShipJSON(t, dir, map[string]any{"adapters": map[string]any{"telegram": map[string]any{"enabled": false}}})
	if out, errOut, code := runShip(t, baseEnv(), "doctor", dir); code != 0 || strings.Contains(out, "✗") {
		t.Errorf("doctor with telegram off: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A typo in ship.json: doctor and start say the section, the nearest
// name and the docs, in one line.
func TestConfigTypoIsOneLineWithTheNearestName(t *testing.T) {
	t.Parallel()
	dir := initProject(t)
	addToShipJSON(t, dir, map[string]any{"queue": map[string]any{"capcity": 5}})
	want := `queue: unknown field "capcity" — did you mean "capacity"? (see docs/configuration.md#configuration)`
	_, stderr, code := runShip(t, baseEnv(), "start", dir, "--offline")
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("start: exit %d, stderr %q", code, stderr)
	}
	stdout, _, code := runShip(t, baseEnv(), "doctor", dir)
	if code != 1 || !strings.Contains(stdout, "✗ config: ship.json: "+want) {
		t.Errorf("doctor: exit %d:\n%s", code, stdout)
	}
}

// A server without GET /v1/models gets a 1-token call through ship's own
// model client instead; a refused key is named there too.
func TestDoctorFallsBackToAOneTokenCall(t *testing.T) {
	t.Parallel()
	fake, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{APIKey: docModelKey, NoModelList: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	dir := initProject(t)
	env := replaceEnv(modelEnv(fake), "LLM_API_KEY", docModelKey)
	stdout, stderr, code := runShip(t, env, "doctor", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if r := doctorJSON(t, stdout)["model default"]; r.Level != "ok" || !strings.Contains(r.Detail, "1-token call was answered") {
		t.Errorf("model default: %+v", r)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].MaxTokens != 1 || reqs[0].Model != "fake" {
		t.Errorf("the model saw %+v, want one call for 1 token of model fake", reqs)
	}

	const wrongKey = "sk-Wz5Qm8Xv3Lb7Tk2Np9"
	stdout, stderr, code = runShip(t, replaceEnv(env, "LLM_API_KEY", wrongKey), "doctor", dir)
	if code != 1 || !strings.Contains(stdout, "✗ model default: LLM_API_KEY (llm.apiKey) is refused by 127.0.0.1") {
		t.Errorf("wrong key: exit %d\n%s", code, stdout)
	}
	noSecrets(t, stdout+stderr, []string{docModelKey, wrongKey})
}

// A webhook left set while ship polls is reported: ship start deletes it,
// and whatever received it stops receiving.
func TestDoctorReportsAWebhookWhileShipPolls(t *testing.T) {
	t.Parallel()
	tg := startTelegram(t, docTelegramToken)
	fake, err := fakeopenai.StartWithOptions(nil, fakeopenai.Options{Models: []string{"fake"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	resp, err := http.PostForm(tg.URL()+"/bot"+docTelegramToken+"/setWebhook", url.Values{"url": {"https://old.example.com/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	dir := initProject(t)
	stdout, stderr, code := runShip(t, append(modelEnv(fake), telegramEnv(tg, docTelegramToken)...), "doctor", dir)
	if code != 0 || !strings.Contains(stdout, "! telegram webhook: a webhook is set (old.example.com) but ship polls: ship start deletes it") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if hook, _ := tg.Webhook(); hook == "" {
		t.Error("doctor deleted the webhook: it must only look")
	}
}
