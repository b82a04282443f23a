package faketelegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func do(t *testing.T, method, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRawWire(t *testing.T) {
	s, _ := start(t)
	base := s.URL() + "/bot" + testToken + "/"
	if code, body := do(t, "GET", s.URL()+"/botnope/getMe", "", ""); code != 401 ||
		body != `{"ok":false,"error_code":401,"description":"Unauthorized"}` {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	if code, body := do(t, "POST", base+"noSuchMethod", "", ""); code != 404 ||
		body != `{"ok":false,"error_code":404,"description":"Not Found"}` {
		t.Fatalf("unknown method: %d %s", code, body)
	}
	if code, body := do(t, "GET", base+"GETME", "", ""); code != 200 || !strings.HasPrefix(body, `{"ok":true,"result":{"id":1000,"is_bot":true`) {
		t.Fatalf("GET GETME: %d %s", code, body)
	}
	s.Push(s.PrivateText(42, "alice", "hi"))
	code, body := do(t, "POST", base+"sendMessage", "application/json",
		`{"chat_id":42,"text":"json body","reply_parameters":{"message_id":1},"disable_notification":true}`)
	if code != 200 || !strings.Contains(body, `"reply_to_message":{`) {
		t.Fatalf("JSON body: %d %s", code, body)
	}
	if code, body := do(t, "POST", base+"sendmessage?chat_id=42&text=from+query", "", ""); code != 200 {
		t.Fatalf("query string: %d %s", code, body)
	}
	if code, _ := do(t, "POST", base+"sendChatAction", "application/x-www-form-urlencoded", "chat_id=42&action=typing"); code != 200 {
		t.Fatalf("sendChatAction: %d", code)
	}
	if code, body := do(t, "POST", base+"sendChatAction", "application/x-www-form-urlencoded", "chat_id=42&action=dancing"); code != 400 {
		t.Fatalf("bad action: %d %s", code, body)
	}
	sent := s.Sent()
	if len(sent) != 2 || sent[0].ReplyTo != 1 || sent[0].Text != "json body" || sent[0].Params["disable_notification"] != "true" ||
		sent[1].Text != "from query" {
		t.Fatalf("Sent %+v", sent)
	}
}

func TestRawUpdatesAndAllowedUpdates(t *testing.T) {
	s, bot := start(t)
	if id := s.Push(Update{"update_id": 500, "message": map[string]any{"message_id": 30, "date": 1,
		"chat":              map[string]any{"id": -77, "type": "supergroup", "is_forum": true},
		"message_thread_id": 12, "is_topic_message": true, "text": "raw"}}); id != 500 {
		t.Fatalf("explicit id: %d", id)
	}
	edited := s.Push(Update{"edited_message": map[string]any{"message_id": 30, "date": 1, "edit_date": 2,
		"chat": map[string]any{"id": -77, "type": "supergroup"}, "text": "raw!"}})
	if edited != 501 {
		t.Fatalf("next id: %d", edited)
	}
	s.Push(Update{"message_reaction": map[string]any{"message_id": 30}})
	if list, sent := s.AllowedUpdates(); sent || list != nil {
		t.Fatalf("AllowedUpdates before any request: %q %v", list, sent)
	}
	_, ups := getUpdates(t, bot, tgbotapi.Params{"allowed_updates": `["message"]`})
	if list, sent := s.AllowedUpdates(); !sent || !slices.Equal(list, []string{"message"}) {
		t.Fatalf("AllowedUpdates: %q %v", list, sent)
	}
	if len(ups) != 1 || ups[0].Message == nil || ups[0].Message.Text != "raw" {
		t.Fatalf("allowed message only: %+v", ups)
	}
	// The edited_message was dropped; the default set does not include reactions.
	_, ups = getUpdates(t, bot, tgbotapi.Params{"allowed_updates": `[]`})
	if list, sent := s.AllowedUpdates(); !sent || list == nil || len(list) != 0 {
		t.Fatalf("AllowedUpdates after []: %q %v", list, sent)
	}
	if len(ups) != 1 || ups[0].UpdateID != 500 {
		t.Fatalf("after filtering: %+v", ups)
	}
	// A pushed raw message is known (as last edited): the bot can reply to it, and ids continue after it.
	msg, err := bot.Send(tgbotapi.MessageConfig{BaseChat: tgbotapi.BaseChat{ChatID: -77, ReplyToMessageID: 30}, Text: "ok"})
	if err != nil || msg.MessageID != 31 || msg.ReplyToMessage == nil || msg.ReplyToMessage.Text != "raw!" {
		t.Fatalf("reply to a raw message: %+v %v", msg, err)
	}
}

func TestFilesAndUploads(t *testing.T) {
	s, bot := start(t)
	s.AddFile("F1", "voice/file_1.oga", []byte("OggS-data"))
	f, err := bot.GetFile(tgbotapi.FileConfig{FileID: "F1"})
	if err != nil || f.FilePath != "voice/file_1.oga" || f.FileSize != 9 || f.FileUniqueID == "" {
		t.Fatalf("getFile: %+v %v", f, err)
	}
	if code, body := do(t, "GET", s.URL()+"/file/bot"+testToken+"/"+f.FilePath, "", ""); code != 200 || body != "OggS-data" {
		t.Fatalf("download: %d %q", code, body)
	}
	if code, _ := do(t, "GET", s.URL()+"/file/botnope/"+f.FilePath, "", ""); code != 404 {
		t.Fatalf("download with a wrong token: %d", code)
	}
	_, err = bot.GetFile(tgbotapi.FileConfig{FileID: "nope"})
	if e := tgErr(t, err); e.Code != 400 || e.Message != "Bad Request: invalid file_id" {
		t.Fatalf("unknown file: %+v", e)
	}

	photo := tgbotapi.NewPhoto(42, tgbotapi.FileBytes{Name: "a.png", Bytes: PNG(3, 2)})
	photo.Caption = "a <b>pic</b>"
	photo.ParseMode = "HTML"
	msg, err := bot.Send(photo)
	if err != nil || len(msg.Photo) == 0 || msg.Caption != "a pic" {
		t.Fatalf("sendPhoto: %+v %v", msg, err)
	}
	if b, ok := s.FileContent(msg.Photo[len(msg.Photo)-1].FileID); !ok || !bytes.Equal(b, PNG(3, 2)) {
		t.Fatalf("uploaded content %v %v", b, ok)
	}
	doc := tgbotapi.NewDocument(42, tgbotapi.FileID("F1"))
	if msg, err := bot.Send(doc); err != nil || msg.Document == nil || msg.Document.FileID != "F1" {
		t.Fatalf("sendDocument by file_id: %+v %v", msg, err)
	}
	sent := s.Sent()
	if len(sent) != 2 || sent[0].Method != "sendPhoto" || sent[0].Text != "a <b>pic</b>" ||
		sent[0].Params["photo"] != msg.Photo[len(msg.Photo)-1].FileID || sent[1].Method != "sendDocument" {
		t.Fatalf("Sent %+v", sent)
	}
	// Uploads go through tgbotapi's UploadFiles, whose errors carry no Code.
	s.FailNext("sendPhoto", 1, Failure{ErrorCode: 429, RetryAfter: 2})
	_, err = bot.Send(photo)
	if e := tgErr(t, err); e.Code != 0 || e.RetryAfter != 2 {
		t.Fatalf("upload failure: %+v", e)
	}
}

func TestMarkup(t *testing.T) {
	const stadium = "🏟 🏟"
	cases := []struct {
		parse      func(string) (string, error)
		in, out, e string
	}{
		{parseMarkdownV2, "v1.5", "", `Character '.' is reserved and must be escaped with the preceding '\'`},
		{parseMarkdownV2, `v1\.5 \(x\) \- y\!`, "v1.5 (x) - y!", ""},
		{parseMarkdownV2, "*open", "", "Can't find end of Bold entity at byte offset 0"},
		{parseMarkdownV2, stadium + "_abac * asd ", "", "Can't find end of Bold entity at byte offset 15"},
		{parseMarkdownV2, stadium + "```a ", "", "Can't find end of PreCode entity at byte offset 9"},
		{parseMarkdownV2, stadium + "__🏟 _🏟___", "", "Can't find end of Italic entity at byte offset 23"},
		{parseMarkdownV2, "[telegram\\.org](asd\\)", "", "Can't find end of a URL at byte offset 16"},
		{parseMarkdownV2, stadium + "||test\\|", "", "Can't find end of Spoiler entity at byte offset 9"},
		{parseMarkdownV2, ">\n*a*>2", "", `Character '>' is reserved and must be escaped with the preceding '\'`},
		{parseMarkdownV2, ">*b\n>ld \n>bo\nld*\nasd", "", "Can't find end of Bold entity at byte offset 1"},
		{parseMarkdownV2, "*b* _i_ __u__ ~s~ ||sp|| [l](http://x.y/a\\)b) `c.d` ```go\nx := 1.5\n```", "b i u s sp l c.d x := 1.5\n", ""},
		{parseMarkdownV2, ">quote.\\.\n>more", "", `Character '.' is reserved and must be escaped with the preceding '\'`},
		{parseMarkdownV2, ">q\n>w||\nplain", "q\nw\nplain", ""},
		{parseMarkdownV2, `\\ \➡️`, `\ \➡️`, ""},
		{parseHTML, "<b>b</b> <i>i</i> <a href=\"http://x\">l</a> <code>a<b</code>", "", `Unsupported start tag "b</code" at byte offset 50`},
		{parseHTML, `<b>b</b> <pre><code class="language-go">x &lt; y</code></pre> <span class="tg-spoiler">s</span>`, "b x < y s", ""},
		{parseHTML, "a < b", "", `Unsupported start tag "" at byte offset 2`},
		{parseHTML, "mail <kahn@inbox.ru>", "", `Unsupported start tag "kahn@inbox.ru" at byte offset 5`},
		{parseHTML, "x<y", "", "Unclosed start tag at byte offset 1"},
		{parseHTML, "<i>a</em   >", "", `Unmatched end tag at byte offset 4, expected "</i>", found "</em>"`},
		{parseHTML, "<b></b></", "", "Unexpected end tag at byte offset 7"},
		{parseHTML, "<i>a</i   ", "", "Unclosed end tag at byte offset 4"},
		{parseHTML, "<span>x</span>", "", `Tag "span" must have class "tg-spoiler" at byte offset 0`},
		{parseHTML, "&ge;&lt;&gt;&amp;&quot;&#12345678;&#x41;&#66 AT&T </>", "", "Unexpected end tag at byte offset 50"},
		{parseHTML, "&ge;&lt;&gt;&amp;&quot;&#12345678;&#x41;&#66 AT&T <i>x</>", "&ge;<>&\"&#12345678;AB AT&T x", ""},
		{parseHTML, "&#xDFDF;", "", "Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units"},
		{parseMarkdown, "*b* _i_ `c` [l](https://e.com) a\\_b 2*3", "", "Can't find end of the entity starting at byte offset 37"},
		{parseMarkdown, "*b* _i_ `c` [l](https://e.com) a\\_b snake\\_case", "b i c l a_b snake_case", ""},
		{parseMarkdown, "```python\nprint(1)\n```", "print(1)\n", ""},
	}
	for _, c := range cases {
		out, err := c.parse(c.in)
		switch {
		case c.e != "" && (err == nil || err.Error() != c.e):
			t.Errorf("%q: error %v, want %q", c.in, err, c.e)
		case c.e == "" && (err != nil || out != c.out):
			t.Errorf("%q: %q, %v; want %q", c.in, out, err, c.out)
		}
	}
}

func TestBuildersAssignIncreasingIDs(t *testing.T) {
	s, _ := start(t)
	a := s.GroupText(-9, 1, "u1", "a")["message"].(map[string]any)
	b := s.GroupText(-9, 2, "", "b")["message"].(map[string]any)
	other := s.PrivateText(5, "p", "c")["message"].(map[string]any)
	if a["message_id"] != int64(1) || b["message_id"] != int64(2) || other["message_id"] != int64(1) {
		t.Fatalf("ids %v %v %v", a["message_id"], b["message_id"], other["message_id"])
	}
	raw, _ := json.Marshal(b)
	var m tgbotapi.Message
	if err := json.Unmarshal(raw, &m); err != nil || m.From.FirstName != "User 2" || m.Chat.Title == "" {
		t.Fatalf("builder message %s %v", raw, err)
	}
}

func TestWebhook(t *testing.T) {
	s, bot := start(t)
	ctx := guard(t)
	type delivery struct {
		secret string
		body   []byte
	}
	got := make(chan delivery, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Get("X-Telegram-Bot-Api-Secret-Token"), b}
	}))
	defer hs.Close()

	_, err := bot.MakeRequest("setWebhook", tgbotapi.Params{"url": hs.URL + "/hook", "secret_token": "a b"})
	if e := tgErr(t, err); e.Message != "Bad Request: secret token contains unallowed characters" {
		t.Fatalf("bad secret: %+v", e)
	}
	resp, err := bot.MakeRequest("setWebhook", tgbotapi.Params{"url": hs.URL + "/hook", "secret_token": "s3cr3t_-X",
		"allowed_updates": `["message"]`})
	if err != nil || resp.Description != "Webhook was set" {
		t.Fatalf("setWebhook: %v %+v", err, resp)
	}
	if list, sent := s.AllowedUpdates(); !sent || !slices.Equal(list, []string{"message"}) {
		t.Fatalf("AllowedUpdates after setWebhook: %q %v", list, sent)
	}
	if url, secret := s.Webhook(); url != hs.URL+"/hook" || secret != "s3cr3t_-X" {
		t.Fatalf("Webhook() = %q, %q", url, secret)
	}
	if info, err := bot.GetWebhookInfo(); err != nil || info.URL != hs.URL+"/hook" {
		t.Fatalf("getWebhookInfo: %+v %v", info, err)
	}
	_, err = bot.MakeRequest("getUpdates", nil)
	if e := tgErr(t, err); e.Code != 409 || e.Message != errWebhookActive.desc {
		t.Fatalf("getUpdates with a webhook: %+v", e)
	}
	status, err := s.DeliverWebhook(ctx, s.PrivateText(42, "alice", "via hook"))
	if err != nil || status != 200 {
		t.Fatalf("DeliverWebhook: %d %v", status, err)
	}
	d := <-got
	// An edit is left out by allowed_updates ["message"]: not sent.
	edit := s.PrivateText(42, "alice", "via hook, edited")
	if _, err := s.DeliverWebhook(ctx, Update{"edited_message": edit["message"]}); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("DeliverWebhook of an edit not allowed: %v", err)
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(d.body, &u); err != nil || d.secret != "s3cr3t_-X" || u.UpdateID == 0 ||
		u.Message.Text != "via hook" {
		t.Fatalf("delivered %q %s (%v)", d.secret, d.body, err)
	}
	reply := tgbotapi.NewMessage(42, "got it")
	reply.ReplyToMessageID = u.Message.MessageID
	if _, err := bot.Send(reply); err != nil {
		t.Fatalf("reply to a webhook message: %v", err)
	}
	if _, err := bot.Request(tgbotapi.DeleteWebhookConfig{}); err != nil {
		t.Fatal(err)
	}
	if url, secret := s.Webhook(); url != "" || secret != "" {
		t.Fatalf("after deleteWebhook: %q %q", url, secret)
	}
	if _, err := s.DeliverWebhook(ctx, s.PrivateText(42, "alice", "x")); err == nil {
		t.Fatal("DeliverWebhook without a webhook succeeded")
	}
}
