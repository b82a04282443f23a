package fakelark_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/core/httpserverext"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/shipmyagent/ship/internal/fakelark"
)

// quiet keeps the SDK from printing to stdout.
type quiet struct{}

func (quiet) Debug(context.Context, ...any) {}
func (quiet) Info(context.Context, ...any)  {}
func (quiet) Warn(context.Context, ...any)  {}
func (quiet) Error(context.Context, ...any) {}

func start(t *testing.T, opts fakelark.Options) *fakelark.Server {
	t.Helper()
	s, err := fakelark.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard
	t.Cleanup(cancel)
	return c
}

// client is a real SDK client for s. Each fake has its own app id: the SDK
// caches tokens per process by app id and secret.
func client(s *fakelark.Server) *lark.Client {
	return lark.NewClient(s.AppID(), s.AppSecret(), lark.WithOpenBaseUrl(s.URL()), lark.WithLogger(quiet{}))
}

func createText(t *testing.T, cli *lark.Client, chatID, text, uuid string) *larkim.CreateMessageResp {
	t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	resp, err := cli.Im.V1.Message.Create(ctx(t), larkim.NewCreateMessageReqBuilder().
		ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatID).MsgType("text").
			Content(string(content)).Uuid(uuid).Build()).Build())
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return resp
}

func TestSendsAreRecordedAndDeduplicatedByUUID(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	first := createText(t, cli, "oc_1", "hello", "u-1")
	if first.Code != 0 || first.Data == nil || *first.Data.MessageId == "" {
		t.Fatalf("create: code %d msg %q", first.Code, first.Msg)
	}
	again := createText(t, cli, "oc_1", "hello", "u-1")
	if again.Code != 0 || *again.Data.MessageId != *first.Data.MessageId {
		t.Errorf("same uuid: code %d id %v, want the first message again", again.Code, again.Data)
	}
	createText(t, cli, "oc_1", "hello", "u-2")
	sent := s.Sent()
	if len(sent) != 2 || sent[0].Text != "hello" || sent[0].ChatID != "oc_1" || sent[0].UUID != "u-1" {
		t.Fatalf("sent %+v", sent)
	}
	if s.TokensIssued() != 1 {
		t.Errorf("%d tokens issued, want 1 (the SDK caches it)", s.TokensIssued())
	}

	// A reply in thread opens a thread on the target; the next reply to it
	// lands in that thread too.
	reply := func(uuid string, inThread bool) *larkim.ReplyMessageResp {
		resp, err := cli.Im.V1.Message.Reply(ctx(t), larkim.NewReplyMessageReqBuilder().
			MessageId(*first.Data.MessageId).
			Body(larkim.NewReplyMessageReqBodyBuilder().MsgType("text").Content(`{"text":"re"}`).
				ReplyInThread(inThread).Uuid(uuid).Build()).Build())
		if err != nil || resp.Code != 0 {
			t.Fatalf("reply: %v %+v", err, resp)
		}
		return resp
	}
	r1 := reply("u-3", true)
	reply("u-4", false)
	sent = s.Sent()
	if len(sent) != 4 || sent[2].ReplyTo != *first.Data.MessageId || !sent[2].ReplyInThread ||
		sent[2].ThreadID == "" || sent[3].ThreadID != sent[2].ThreadID || *r1.Data.ThreadId != sent[2].ThreadID {
		t.Errorf("replies %+v", sent[2:])
	}
}

func TestExpiredTokenIsRefusedAndTheSDKKeepsIt(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	createText(t, cli, "oc_1", "one", "")
	s.ExpireTokens()
	resp := createText(t, cli, "oc_1", "two", "")
	if resp.Code != fakelark.CodeInvalidToken {
		t.Fatalf("code %d, want %d", resp.Code, fakelark.CodeInvalidToken)
	}
	// The SDK retries once with the same cached token and gives up: the
	// reason the adapter drops the cached token itself.
	if n := s.Calls(fakelark.PathCreate); n != 3 {
		t.Errorf("%d create calls, want 3", n)
	}
	if s.TokensIssued() != 1 {
		t.Errorf("%d tokens issued: the SDK fetched a new token on its own", s.TokensIssued())
	}
}

func TestRevokedTokenIsRefusedWith99991668AndTheSDKDoesNotRetry(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	createText(t, cli, "oc_1", "one", "")
	s.RevokeTokens()
	resp := createText(t, cli, "oc_1", "two", "")
	if resp.Code != fakelark.CodeTokenInvalid {
		t.Fatalf("code %d, want %d", resp.Code, fakelark.CodeTokenInvalid)
	}
	// Unlike 99991663, the SDK does not even retry 99991668: one call, and
	// the token stays cached.
	if n := s.Calls(fakelark.PathCreate); n != 2 {
		t.Errorf("%d create calls, want 2", n)
	}
	if s.TokensIssued() != 1 || len(s.Sent()) != 1 {
		t.Errorf("%d tokens issued, %d sent", s.TokensIssued(), len(s.Sent()))
	}
}

func TestInjectedFailures(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	s.FailNext(fakelark.PathCreate, 1, fakelark.CodeRateLimit, "request trigger frequency limit")
	resp := createText(t, cli, "oc_1", "x", "")
	if resp.Code != fakelark.CodeRateLimit || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("got code %d status %d", resp.Code, resp.StatusCode)
	}
	if resp := createText(t, cli, "oc_1", "x", ""); resp.Code != 0 {
		t.Errorf("after the failure: code %d", resp.Code)
	}
	info, err := cli.Get(ctx(t), fakelark.PathBot, nil, larkcore.AccessTokenTypeTenant)
	if err != nil || !strings.Contains(string(info.RawBody), `"open_id":"ou_bot"`) {
		t.Errorf("bot info: %v %s", err, info.RawBody)
	}
}

func TestWebsocketEventsAcksAndPings(t *testing.T) {
	s := start(t, fakelark.Options{})
	var mu sync.Mutex
	var got []*larkim.P2MessageReceiveV1
	d := dispatcher.NewEventDispatcher("", "").OnP2MessageReceiveV1(func(_ context.Context, ev *larkim.P2MessageReceiveV1) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	})
	cli := larkws.NewClient(s.AppID(), s.AppSecret(), larkws.WithDomain(s.URL()),
		larkws.WithEventHandler(d), larkws.WithLogger(quiet{}))
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cli.Start(runCtx) }()

	ev := s.GroupText("oc_g", "ou_ann", "@_user_1 hi", s.BotMention("@_user_1")).InThread("omt_1", "om_root")
	ack, err := s.PushEvent(ctx(t), ev)
	if err != nil || ack.Code != http.StatusOK {
		t.Fatalf("ack %+v %v", ack, err)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("handler saw %d events", len(got))
	}
	m := got[0].Event.Message
	if got[0].EventV2Base.Header.EventID != ev.EventID || *m.MessageId != ev.MessageID || *m.ChatType != "group" ||
		*m.ThreadId != "omt_1" || *m.Content != `{"text":"@_user_1 hi"}` || *m.Mentions[0].Id.OpenId != "ou_bot" ||
		*got[0].Event.Sender.SenderId.OpenId != "ou_ann" {
		t.Errorf("event decoded as %s", larkcore.Prettify(got[0].Event))
	}
	mu.Unlock()

	// The SDK pings right after connecting; the fake answers with a pong.
	deadline := time.Now().Add(30 * time.Second) // hang guard
	for s.Pings() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.Pings() == 0 {
		t.Error("no ping answered")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Start returned %v after cancel", err)
	}
}

func TestWebhookIsEncryptedAndSignedAsTheSDKExpects(t *testing.T) {
	const key = "encrypt-key-1"
	s := start(t, fakelark.Options{VerificationToken: "vt"})
	var mu sync.Mutex
	var got []string
	d := dispatcher.NewEventDispatcher("vt", key).OnP2MessageReceiveV1(func(_ context.Context, ev *larkim.P2MessageReceiveV1) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, *ev.Event.Message.Content)
		return nil
	})
	srv := httptest.NewServer(http.HandlerFunc(httpserverext.NewEventHandlerFunc(d)))
	t.Cleanup(srv.Close)

	status, body, err := s.DeliverWebhook(ctx(t), srv.URL, key, s.P2PText("oc_1", "ou_ann", "hello"))
	if err != nil || status != http.StatusOK {
		t.Fatalf("deliver: %d %s %v", status, body, err)
	}
	mu.Lock()
	if len(got) != 1 || got[0] != `{"text":"hello"}` {
		t.Errorf("handler saw %q", got)
	}
	mu.Unlock()

	status, body, _ = s.PostPlain(ctx(t), srv.URL, key, s.URLVerification("c-123"))
	if status != http.StatusOK || !strings.Contains(body, `"challenge":"c-123"`) {
		t.Errorf("url_verification: %d %s", status, body)
	}

	// A wrong signature is refused by the SDK, but with HTTP 500, not 401.
	raw, _ := fakelark.EncryptedBody(key, s.EventJSON(s.P2PText("oc_1", "ou_ann", "forged")))
	req, _ := fakelark.WebhookRequest(ctx(t), srv.URL, key, raw, time.Now())
	req.Header.Set(fakelark.HeaderSignature, strings.Repeat("0", 64))
	status, _, _ = s.Do(req)
	mu.Lock()
	if status == http.StatusOK || len(got) != 1 {
		t.Errorf("forged call: status %d, handler calls %d", status, len(got))
	}
	mu.Unlock()
}
