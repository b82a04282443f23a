package qq_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/tools"
)

// seedTS is the X-Signature-Timestamp of the seed requests.
const seedTS = "1767225600"

// seedPayloads are real QQ webhook bodies (the bot 10001).
var seedPayloads = []string{
	// A group message @-mentioning the bot (QQ strips the mention).
	`{"op":0,"id":"GROUP_AT_MESSAGE_CREATE:ev000001","t":"GROUP_AT_MESSAGE_CREATE","d":{"id":"ROBOT1.0_msg000001","content":" hello there","group_id":"G1","group_openid":"G1","author":{"id":"M1","member_openid":"M1"},"timestamp":"2026-01-01T08:00:00+08:00"}}`,
	// A one-to-one message, non-ASCII.
	`{"op":0,"id":"C2C_MESSAGE_CREATE:ev000002","t":"C2C_MESSAGE_CREATE","d":{"id":"ROBOT1.0_msg000002","content":"你好 👍🏽 /help","author":{"id":"U1","user_openid":"U1"},"timestamp":"2026-01-01T08:00:01+08:00"}}`,
	// A guild channel @-message with an attachment.
	`{"op":0,"id":"AT_MESSAGE_CREATE:ev000003","t":"AT_MESSAGE_CREATE","d":{"id":"ROBOT1.0_msg000003","content":"<@!10001> look at this","guild_id":"GU1","channel_id":"CH1","author":{"id":"A1","username":"user-A1","bot":false},"member":{"nick":"user-A1","roles":["1"]},"mentions":[{"id":"10001","username":"ship","bot":true}],"attachments":[{"content_type":"image/png","filename":"a.png","url":"gchat.qpic.cn/a.png"}],"timestamp":"2026-01-01T08:00:02+08:00"}}`,
	// A guild direct message.
	`{"op":0,"id":"DIRECT_MESSAGE_CREATE:ev000004","t":"DIRECT_MESSAGE_CREATE","d":{"id":"ROBOT1.0_msg000004","content":"private question","guild_id":"DM1","channel_id":"DCH1","src_guild_id":"src-DM1","direct_message":true,"author":{"id":"A2","username":"user-A2","bot":false},"timestamp":"2026-01-01T08:00:03+08:00"}}`,
	// The callback address check.
	`{"op":13,"d":{"plain_token":"Arq0D5A61EgUu4OxUvOp","event_ts":"1767225600"}}`,
	// A heartbeat.
	`{"op":1,"d":42}`,
}

// hookTarget is a QQ adapter in webhook mode, running, with the offline
// model behind it; requests go straight to ServeHTTP. Only one may run at
// a time in a process (botgo's base URLs; see botgoseam.go).
type hookTarget struct {
	adapter *qq.Adapter
	engine  *engine.Engine
	qq      *fakeqq.Server
}

func newHookTarget(tb testing.TB) *hookTarget {
	tb.Helper()
	fake, err := fakeqq.Start(fakeqq.Options{AppID: appID, AppSecret: appSecret, HeartbeatInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(fake.Close)
	eng, err := engine.New(engine.Options{
		Tools:    tools.Default,
		ChatsDir: filepath.Join(tb.TempDir(), "chats"), Durability: chat.DurabilityNone,
		Model: llm.NewOffline(), Logger: zerolog.Nop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	a, err := qq.New(qq.Options{
		AppID: appID, AppSecret: appSecret, APIBase: fake.URL(), TokenBase: fake.URL(), Mode: qq.ModeWebhook,
		ReconnectBackoff: 10 * time.Millisecond, RetryBase: time.Millisecond,
		Host: eng, Logger: zerolog.Nop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	eng.Register(a.Name(), a)
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-runErr; err != nil {
			tb.Errorf("adapter stopped with error: %v", err)
		}
		_, _ = eng.Close(context.Background())
	})
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for a.Status().State != "running" {
		if time.Now().After(deadline) {
			tb.Fatalf("the adapter never ran: %+v", a.Status())
		}
		time.Sleep(time.Millisecond)
	}
	return &hookTarget{adapter: a, engine: eng, qq: fake}
}

// answer is what ServeHTTP did with one request.
type answer struct {
	code     int
	body     string
	panicked any // non-nil: ServeHTTP panicked with this
}

func (a answer) String() string {
	if a.panicked != nil {
		return fmt.Sprintf("a panic (%v)", a.panicked)
	}
	return fmt.Sprintf("%d %s", a.code, strings.TrimSpace(a.body))
}

// post calls ServeHTTP with body and the signature headers (an empty value
// leaves its header out), recovering a panic so it can be reported.
func (h *hookTarget) post(body []byte, ts, sig string) (a answer) {
	req := httptest.NewRequest(http.MethodPost, qq.WebhookPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "QQBot-Callback")
	for k, v := range map[string]string{fakeqq.HeaderTimestamp: ts, fakeqq.HeaderSignature: sig} {
		if v != "" {
			req.Header[k] = []string{v}
		}
	}
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			a = answer{panicked: p}
		}
	}()
	h.adapter.ServeHTTP(rec, req)
	return answer{code: rec.Code, body: rec.Body.String()}
}

// untouched fails unless nothing was logged, queued or sent.
func (h *hookTarget) untouched(t *testing.T, what string) {
	t.Helper()
	keys, err := h.engine.ChatKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st := h.engine.QueueStats(); len(keys) != 0 || st.Waiting+st.Running != 0 || len(h.qq.Sent()) != 0 {
		t.Fatalf("%s changed something: chats %v, queue %+v, %d sent", what, keys, st, len(h.qq.Sent()))
	}
}

// signatureOK reports whether sig is QQ's signature of ts+body.
func signatureOK(body []byte, ts, sig string) bool {
	raw, err := hex.DecodeString(sig)
	if ts == "" || err != nil || len(raw) != ed25519.SignatureSize {
		return false
	}
	pub := fakeqq.Key(appSecret).Public().(ed25519.PublicKey)
	return ed25519.Verify(pub, append([]byte(ts), body...), raw)
}

// FuzzWebhookForged: arbitrary bodies, timestamps and signatures that do not
// sign them get a 4xx without a panic and change nothing.
func FuzzWebhookForged(f *testing.F) {
	for i, p := range seedPayloads {
		body, other := []byte(p), []byte(seedPayloads[(i+1)%len(seedPayloads)])
		f.Add(body, seedTS, fakeqq.Sign(appSecret, seedTS, body))                         // genuine (skipped; mutated)
		f.Add(body, seedTS, fakeqq.Sign(appSecret, seedTS, other))                        // another call's
		f.Add(body, "1767225601", fakeqq.Sign(appSecret, seedTS, body))                   // another timestamp
		f.Add(body, seedTS, fakeqq.Sign("guessed-secret-guessed-secret!!", seedTS, body)) // another key
		f.Add(body, "", "")
	}
	f.Add([]byte(strings.Repeat("[", 10_000)), seedTS, strings.Repeat("00", 64))
	f.Add([]byte("{\"op\":0,\"d\":\"\xff\xfe\"}"), "\x00", "zz")
	h := newHookTarget(f)
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		if signatureOK(body, ts, sig) {
			t.Skip("a genuine signature: FuzzWebhookSigned covers it")
		}
		a := h.post(body, ts, sig)
		if a.panicked != nil || a.code < 400 || a.code >= 500 {
			t.Fatalf("a forged call: %s, want a 4xx", a)
		}
		h.untouched(t, "a forged call")
	})
}

// FuzzWebhookSigned plays QQ itself sending arbitrary bodies, signed: no
// panic, 400 for a body that is not JSON, and a QQ acknowledgement (200)
// for every JSON payload.
func FuzzWebhookSigned(f *testing.F) {
	for _, p := range seedPayloads {
		f.Add([]byte(p))
	}
	f.Add([]byte(`{"op":0,"t":"GROUP_AT_MESSAGE_CREATE","d":null}`))
	f.Add([]byte(`{"op":0,"t":"C2C_MESSAGE_CREATE","d":{"id":"m","content":"x","author":null}}`))
	f.Add([]byte(`{"op":0,"t":"AT_MESSAGE_CREATE","d":{"id":"m2","content":"<@!10001>","channel_id":"C","mentions":[null,{}]}}`))
	f.Add([]byte(`{"op":13,"d":{"plain_token":"","event_ts":""}}`))
	h := newHookTarget(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		a := h.post(body, ts, fakeqq.Sign(appSecret, ts, body))
		switch {
		case a.panicked != nil:
			t.Fatalf("ServeHTTP panicked on a signed call: %v", a.panicked)
		case !json.Valid(body) && a.code != http.StatusBadRequest:
			t.Fatalf("a signed body that is not JSON: %s, want 400", a)
		case a.code >= 500:
			t.Fatalf("a signed call: %s", a)
		}
	})
}

// TestWebhookRefusesHostileBodies: bodies built to hurt get a 4xx and
// change nothing.
func TestWebhookRefusesHostileBodies(t *testing.T) {
	now := strconv.FormatInt(time.Now().Unix(), 10)
	type call struct {
		body    []byte
		ts, sig string
	}
	signed := func(body []byte) call { return call{body, now, fakeqq.Sign(appSecret, now, body)} }
	event := []byte(seedPayloads[0])
	badUTF8 := bytes.Replace(event, []byte("hello there"), []byte("hello \xff\xfe there"), 1)
	huge := bytes.Replace(event, []byte("hello there"), bytes.Repeat([]byte("a"), 5<<20), 1)
	cases := []struct {
		name string
		call call
		// bug describes a known failure of the adapter: a case that fails
		// so is skipped (reported, not fixed here). Delete it once fixed.
		bug string
	}{
		{name: "forged signature", call: call{event, now, fakeqq.Sign("not-the-app-secret-at-all", now, event)}},
		{name: "signature of another timestamp", call: call{event, now, fakeqq.Sign(appSecret, "1", event)}},
		{name: "no signature", call: call{body: event}},
		{name: "signature not hex", call: call{event, now, strings.Repeat("zz", 64)}},
		{name: "signature too short", call: call{event, now, "abcd"}},
		{name: "100,000 [ unsigned", call: call{body: bytes.Repeat([]byte("["), 100_000)}},
		{name: "100,000 [ signed", call: signed(bytes.Repeat([]byte("["), 100_000))},
		{name: "100,000 nested objects signed", call: signed(bytes.Repeat([]byte(`{"d":`), 100_000))},
		{name: "5 MB body unsigned", call: call{body: huge}},
		{name: "5 MB body signed", call: signed(huge)},
		{name: "invalid UTF-8 unsigned", call: call{body: badUTF8}},
		{name: "invalid UTF-8 signed", call: signed(badUTF8)},
		{name: "invalid UTF-8 outside strings, signed", call: signed([]byte("{\"op\":0,\xff}"))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHookTarget(t)
			a := h.post(c.call.body, c.call.ts, c.call.sig)
			keys, err := h.engine.ChatKeys(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ok := a.panicked == nil && a.code >= 400 && a.code < 500 && len(keys) == 0; !ok && c.bug != "" {
				t.Skipf("known bug: %s (got %s, chats %v)", c.bug, a, keys)
			}
			if a.panicked != nil || a.code < 400 || a.code >= 500 {
				t.Errorf("got %s, want a 4xx", a)
			}
			h.untouched(t, c.name)
		})
	}
}
