package fakeqq

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/tencent-connect/botgo/interaction/signature"
)

const (
	testAppID  = "1001"
	testSecret = "fake-secret"
)

func start(t *testing.T, o Options) *Server {
	t.Helper()
	o.AppID, o.AppSecret = testAppID, testSecret
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // hang guard
	t.Cleanup(cancel)
	return ctx
}

// call makes a request and decodes the JSON answer.
func call(t *testing.T, method, url, auth, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return do(t, req)
}

// do makes a request and decodes the JSON answer.
func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	method, url := req.Method, req.URL.String()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: answer %q is not a JSON object", method, url, b)
	}
	return resp.StatusCode, out
}

func token(t *testing.T, s *Server) string {
	t.Helper()
	status, out := call(t, http.MethodPost, s.URL()+TokenPath, "", `{"appId":"1001","clientSecret":"fake-secret"}`)
	tok, _ := out["access_token"].(string)
	if status != http.StatusOK || tok == "" {
		t.Fatalf("token: %d %v", status, out)
	}
	if _, isString := out["expires_in"].(string); !isString {
		t.Fatalf("expires_in %#v is not a JSON string", out["expires_in"])
	}
	return "QQBot " + tok
}

func TestTokenEndpoint(t *testing.T) {
	s := start(t, Options{})
	if _, out := call(t, http.MethodPost, s.URL()+TokenPath, "", `{"appId":"1001","clientSecret":"nope"}`); out["code"] != float64(CodeBadAppSecret) {
		t.Errorf("bad secret: %v", out)
	}
	a, b := token(t, s), token(t, s)
	if a != b || s.TokenCalls() != 2 {
		t.Errorf("with two hours left the same token comes back: %q %q (%d calls)", a, b, s.TokenCalls())
	}
	short := start(t, Options{TokenLifetime: time.Second})
	if first, second := token(t, short), token(t, short); first == second {
		t.Error("a token within 60 s of expiry is replaced")
	}
}

func TestAuthorizationIsChecked(t *testing.T) {
	s := start(t, Options{})
	url := s.URL() + GatewayBotPath
	for _, auth := range []string{"", "Bearer x", "QQBot unknown"} {
		status, out := call(t, http.MethodGet, url, auth, "")
		want := CodeAuthInvalid
		if strings.HasPrefix(auth, "QQBot ") {
			want = CodeTokenExpired
		}
		if status != http.StatusUnauthorized || out["code"] != float64(want) {
			t.Errorf("%q: %d %v", auth, status, out)
		}
	}
	status, out := call(t, http.MethodGet, url, token(t, s), "")
	if status != http.StatusOK || !strings.HasPrefix(out["url"].(string), "ws://") || out["shards"] != float64(1) {
		t.Errorf("gateway/bot: %d %v", status, out)
	}
}

func TestMessagesAreRecordedAndCheckedLikeQQ(t *testing.T) {
	s := start(t, Options{})
	auth := token(t, s)
	ev := s.GroupAt("G", "M", "hi")
	post := func(path, body string) (int, map[string]any) {
		return call(t, http.MethodPost, s.URL()+path, auth, body)
	}

	body := `{"content":"hello","msg_type":0,"msg_id":"` + ev.MessageID + `","msg_seq":1}`
	if status, out := post(GroupPath("G"), body); status != http.StatusOK || out["id"] == "" {
		t.Fatalf("first reply: %d %v", status, out)
	}
	if status, out := post(GroupPath("G"), body); status != http.StatusBadRequest || out["code"] != float64(CodeDuplicateSeq) {
		t.Errorf("same msg_seq again: %d %v", status, out)
	}
	if _, out := post(C2CPath("U"), `{"content":"x","msg_id":"ROBOT1.0_nope","msg_seq":1}`); out["code"] != float64(CodeMsgIDInvalid) {
		t.Errorf("unknown msg_id: %v", out)
	}
	s.FailNext(ChannelPath("C"), 1, 400, CodeMsgIDExpired, "expired")
	if status, out := post(ChannelPath("C"), `{"content":"x"}`); status != 400 || out["code"] != float64(CodeMsgIDExpired) {
		t.Errorf("injected failure: %d %v", status, out)
	}
	if status, out := post(DMPath("D"), `{"content":"to a dm"}`); status != http.StatusOK || out["guild_id"] != "D" {
		t.Errorf("dm: %d %v", status, out)
	}
	sent, err := s.WaitSent(guard(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	if g := sent[0]; g.Kind != "group" || g.Target != "G" || g.MsgID != ev.MessageID || g.MsgSeq != 1 || g.MsgType != 0 || g.Content != "hello" {
		t.Errorf("recorded %+v", g)
	}
	if d := sent[1]; d.Kind != "dm" || d.MsgType != -1 || d.MsgID != "" {
		t.Errorf("recorded %+v", d)
	}
}

// gwConn is a bare gateway client.
type gwConn struct {
	t *testing.T
	c *websocket.Conn
}

func dialGateway(t *testing.T, s *Server) *gwConn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(s.gatewayURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g := &gwConn{t: t, c: c}
	if hello := g.read(); hello.Op != opHello || hello.D.(map[string]any)["heartbeat_interval"].(float64) <= 0 {
		t.Fatalf("first frame %+v, want Hello with an interval", hello)
	}
	return g
}

func (g *gwConn) send(op int, d any) {
	g.t.Helper()
	if err := g.c.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gwConn) read() frame {
	g.t.Helper()
	_ = g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f frame
	if err := g.c.ReadJSON(&f); err != nil {
		g.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

func TestGatewayIdentifyHeartbeatDispatchAndResume(t *testing.T) {
	s := start(t, Options{HeartbeatInterval: time.Second})
	auth := token(t, s)

	bad := dialGateway(t, s)
	bad.send(opIdentify, map[string]any{"token": "QQBot wrong", "intents": 1, "shard": []int{0, 1}})
	if _, _, err := bad.c.ReadMessage(); !websocket.IsCloseError(err, 4004) {
		t.Errorf("bad token: %v, want close 4004", err)
	}

	g := dialGateway(t, s)
	g.send(opIdentify, map[string]any{"token": auth, "intents": 1 << 25, "shard": []int{0, 1}})
	ready := g.read()
	d := ready.D.(map[string]any)
	if ready.T != "READY" || d["session_id"] == "" || d["user"].(map[string]any)["bot"] != true || len(d["shard"].([]any)) != 2 {
		t.Fatalf("READY %+v", ready)
	}
	g.send(opHeartbeat, ready.S)
	if ack := g.read(); ack.Op != opHeartbeatAck {
		t.Errorf("heartbeat answered %+v", ack)
	}
	ev := s.PushC2C("U", "one")
	got := g.read()
	if got.T != EventC2C || got.ID != ev.ID || got.S != ready.S+1 || got.D.(map[string]any)["id"] != ev.MessageID {
		t.Fatalf("dispatch %+v", got)
	}
	if err := s.DropConnection(); err != nil {
		t.Fatal(err)
	}
	s.PushC2C("U", "two") // waits for the next connection

	r := dialGateway(t, s)
	r.send(opResume, map[string]any{"token": strings.TrimPrefix(auth, "QQBot "), "session_id": d["session_id"], "seq": ready.S})
	if f := r.read(); f.T != "RESUMED" {
		t.Fatalf("resume answered %+v", f)
	}
	if f := r.read(); f.ID != ev.ID || f.S != got.S { // replayed: after seq
		t.Errorf("replayed %+v, want %s with seq %d", f, ev.ID, got.S)
	}
	if f := r.read(); f.D.(map[string]any)["content"] != "two" {
		t.Errorf("then the pending event, got %+v", f)
	}
	if err := s.Redeliver(ev.ID); err != nil {
		t.Fatal(err)
	}
	if f := r.read(); f.ID != ev.ID {
		t.Errorf("redelivered %+v", f)
	}
	if err := s.WaitConnected(guard(t), 2); err != nil {
		t.Fatal(err)
	}
	if identified, resumed, beats, intents := s.Gateway(); identified != 1 || resumed != 1 || beats != 1 || intents != 1<<25 {
		t.Errorf("gateway counts %d %d %d %d", identified, resumed, beats, intents)
	}

	unknown := dialGateway(t, s)
	unknown.send(opResume, map[string]any{"token": auth, "session_id": "nope", "seq": 1})
	if f := unknown.read(); f.Op != opInvalidSession {
		t.Errorf("resume of an unknown session answered %+v, want op 9", f)
	}
}

func TestWebhookSignaturesVerifyWithBotgo(t *testing.T) {
	s := start(t, Options{})
	var got http.Header
	var body []byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r.Header.Clone(), must(io.ReadAll(r.Body))
		w.Write([]byte(`{"op":12,"d":0}`))
	}))
	defer hook.Close()
	status, answer, err := s.DeliverWebhook(guard(t), hook.URL, testSecret, s.C2C("U", "hi"))
	if err != nil || status != 200 || string(answer) != `{"op":12,"d":0}` {
		t.Fatalf("delivery: %d %s %v", status, answer, err)
	}
	if ok, err := signature.Verify(testSecret, got, body); !ok || err != nil {
		t.Errorf("botgo does not accept the signature: %v %v", ok, err)
	}
	if ok, _ := signature.Verify("another-secret", got, body); ok {
		t.Error("botgo accepts the signature under another secret")
	}
	var p map[string]any
	if json.Unmarshal(body, &p) != nil || p["op"] != float64(0) || p["t"] != EventC2C || p["id"] == "" {
		t.Errorf("webhook body %s", body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
