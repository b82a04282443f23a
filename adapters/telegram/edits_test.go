package telegram_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// Editing a question does not make the bot answer it again: ship does not
// ask Telegram for edits at all (allowed_updates is ["message",
// "callback_query"]).
func TestEditsAreNotAskedForNorAnswered(t *testing.T) {
	e := newEnv(t, setup{})
	asked := e.tg.PrivateText(80, "ann", "what is 2+3?")
	e.tg.Push(asked)
	if got := e.waitSent(1)[0].Text; got != "echo: what is 2+3?" {
		t.Fatalf("reply %q", got)
	}
	if list, sent := e.tg.AllowedUpdates(); !sent || !slices.Equal(list, []string{"message", "callback_query"}) {
		t.Errorf("getUpdates asked for %q (sent %v), want [message callback_query]", list, sent)
	}
	edited := e.tg.PrivateText(80, "ann", "what is 2+4?")
	em := edited["message"].(map[string]any)
	em["message_id"] = asked["message"].(map[string]any)["message_id"]
	em["edit_date"] = em["date"]
	e.tg.Push(faketelegram.Update{"edited_message": em})
	e.tg.Push(e.tg.PrivateText(80, "ann", "next question"))
	if got := e.waitSent(2)[1].Text; got != "echo: next question" {
		t.Fatalf("second reply %q, want the next question's", got)
	}
	e.idle()
	if n, calls := len(e.tg.Sent()), e.model.RequestCount(); n != 2 || calls != 2 {
		t.Errorf("%d replies from %d model calls, want 2 and 2: the edit is not answered", n, calls)
	}
}

// In webhook mode too: setWebhook leaves edits out, and an edit that still
// arrives (one created before allowed_updates changed) is not answered.
// An update that does not decode is logged with its id and acknowledged.
func TestWebhookLeavesEditsOutAndLogsUndecodableUpdates(t *testing.T) {
	srv, route := newWebhookServer(t)
	e := newEnv(t, setup{mode: telegram.ModeWebhook, noStart: true, opts: func(o *telegram.Options) {
		o.WebhookSecret = "s3cret-s3cret"
		o.WebhookURL = srv.URL
	}})
	route(e.adapter)
	e.start()
	url, secret := waitWebhook(t, e.tg)
	if list, sent := e.tg.AllowedUpdates(); !sent || !slices.Equal(list, []string{"message", "callback_query"}) {
		t.Errorf("setWebhook asked for %q (sent %v), want [message callback_query]", list, sent)
	}
	edit := e.tg.PrivateText(4, "ann", "edited")
	if _, err := e.tg.DeliverWebhook(e.ctx(), faketelegram.Update{"edited_message": edit["message"]}); !errors.Is(err, faketelegram.ErrNotAllowed) {
		t.Errorf("an edit was delivered to the webhook: %v", err)
	}
	postRaw := func(body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	leftover, _ := json.Marshal(map[string]any{"update_id": 900001, "edited_message": edit["message"]})
	if status := postRaw(string(leftover)); status != http.StatusOK {
		t.Errorf("a leftover edit: %d, want 200", status)
	}
	if status := postRaw(`{"update_id":900002,"message":{"message_id":"seven","date":1,"chat":{"id":4,"type":"private"},"text":"hi"}}`); status != http.StatusOK {
		t.Errorf("an undecodable update: %d, want 200 (sending it again would not help)", status)
	}
	if status, err := e.tg.DeliverWebhook(e.ctx(), e.tg.PrivateText(4, "ann", "real one")); err != nil || status != http.StatusOK {
		t.Fatalf("genuine update: %d %v", status, err)
	}
	e.waitSent(1)
	e.idle()
	if n := len(e.tg.Sent()); n != 1 {
		t.Errorf("%d replies, want 1", n)
	}
	if !warnedAbout(e.logs.String(), 900002) {
		t.Error("the undecodable update is not logged at warn level with its update id")
	}
}

// An update whose message does not decode is logged at warn level with its
// update id, and polling goes on past it.
func TestUndecodableUpdateIsLoggedWithItsID(t *testing.T) {
	e := newEnv(t, setup{})
	bad := e.tg.PrivateText(5, "ann", "hi")
	bad["message"].(map[string]any)["message_id"] = "seven" // a number on the wire
	id := e.tg.Push(bad)
	e.tg.Push(e.tg.PrivateText(5, "ann", "after it"))
	if got := e.waitSent(1)[0].Text; got != "echo: after it" {
		t.Fatalf("reply %q", got)
	}
	if !warnedAbout(e.logs.String(), id) {
		t.Errorf("no warn log names update %d", id)
	}
}

// warnedAbout reports a warn-level log line carrying updateId id.
func warnedAbout(logs string, id int64) bool {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Level    string `json:"level"`
			UpdateID int64  `json:"updateId"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Level == "warn" && line.UpdateID == id {
			return true
		}
	}
	return false
}
