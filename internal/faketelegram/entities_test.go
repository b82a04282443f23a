package faketelegram

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters/markdown"
)

// TestEntitiesChecked sends text with entities through the real client:
// valid ones are accepted (parse_mode ignored), ones Telegram's rules
// forbid get the real 400 "can't parse entities" shape.
func TestEntitiesChecked(t *testing.T) {
	srv, bot := start(t)
	send := func(text string, ents ...tgbotapi.MessageEntity) error {
		cfg := tgbotapi.NewMessage(42, text)
		cfg.Entities = ents
		cfg.ParseMode = "MarkdownV2" // ignored when entities are given; "." would fail it
		_, err := bot.Send(cfg)
		return err
	}
	ok := []tgbotapi.MessageEntity{{Type: "bold", Offset: 0, Length: 4}, {Type: "italic", Offset: 2, Length: 2},
		{Type: "text_link", Offset: 5, Length: 2, URL: "https://go.dev"}, {Type: "pre", Offset: 8, Length: 2, Language: "go"}}
	if err := send("😀ab. cd ef", ok...); err != nil {
		t.Fatalf("valid entities: %v", err)
	}
	if m, _ := srv.Message(42, srv.Sent()[0].MessageID); m.Text != "😀ab. cd ef" {
		t.Fatalf("shown text %q", m.Text)
	}
	bad := map[string][]tgbotapi.MessageEntity{
		"cuts a pair":     {{Type: "bold", Offset: 1, Length: 2}},
		"outside":         {{Type: "bold", Offset: 8, Length: 5}},
		"empty":           {{Type: "bold", Offset: 0, Length: 0}},
		"overlap":         {{Type: "bold", Offset: 0, Length: 4}, {Type: "italic", Offset: 3, Length: 3}},
		"bold in code":    {{Type: "code", Offset: 0, Length: 4}, {Type: "bold", Offset: 2, Length: 1}},
		"link in link":    {{Type: "text_link", Offset: 0, Length: 4, URL: "https://a.b"}, {Type: "text_link", Offset: 2, Length: 1, URL: "https://c.d"}},
		"nested quote":    {{Type: "blockquote", Offset: 0, Length: 4}, {Type: "blockquote", Offset: 2, Length: 1}},
		"javascript link": {{Type: "text_link", Offset: 0, Length: 4, URL: "javascript:alert(1)"}},
		"unknown type":    {{Type: "sparkle", Offset: 0, Length: 4}},
	}
	for name, ents := range bad {
		err := send("😀ab. cd ef", ents...)
		if e := tgErr(t, err); e.Code != 400 || !strings.HasPrefix(e.Message, "Bad Request: can't parse entities: ") {
			t.Errorf("%s: %+v, want 400 can't parse entities", name, e)
		}
	}
	if len(srv.Sent()) != 1 {
		t.Fatalf("%d messages recorded, want only the valid one", len(srv.Sent()))
	}
}

// rendered renders md and returns the text and its entities as JSON, as
// the Telegram sender sends them.
func rendered(t testing.TB, md string) (string, string) {
	text, ents := markdown.Telegram(md)
	raw, err := json.Marshal(ents)
	if err != nil {
		t.Fatal(err)
	}
	return text, string(raw)
}

// TestRendererOutputAccepted checks that every reply in the renderer's
// golden corpus, whole and split for Telegram, passes the fake's checks.
func TestRendererOutputAccepted(t *testing.T) {
	files, _ := filepath.Glob("../../adapters/markdown/testdata/*.md")
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	for _, f := range files {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, ents := markdown.Telegram(string(md))
		for _, p := range markdown.Split(text, ents, markdown.MaxTelegramText) {
			raw, _ := json.Marshal(p.Entities)
			if _, e := messageText(p.Text, "", string(raw)); e != nil {
				t.Errorf("%s: %s", f, e.desc)
			}
		}
	}
}

// FuzzRendererOutputAccepted: no Markdown makes the fake reject the
// renderer's entities.
func FuzzRendererOutputAccepted(f *testing.F) {
	for _, s := range []string{"**a `b` c**", "> [x](https://y) `z`", "😀 ~~*é*~~", "| a |\n|--|\n| 中 |", "```go\n<>&\n```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		text, raw := rendered(t, md)
		if text == "" {
			return
		}
		if _, e := checkEntities(text, raw); e != nil {
			t.Fatalf("%q → %q %s: %s", md, text, raw, e.desc)
		}
	})
}

// TestEditWithNewEntitiesIsAModification checks that changing only the
// entities of a message is an edit, not "message is not modified", and
// that the message keeps the entities last sent.
func TestEditWithNewEntitiesIsAModification(t *testing.T) {
	srv, bot := start(t)
	cfg := tgbotapi.NewMessage(42, "hello world")
	cfg.Entities = []tgbotapi.MessageEntity{{Type: "bold", Offset: 0, Length: 5}}
	m, err := bot.Send(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ed := tgbotapi.NewEditMessageText(42, m.MessageID, "hello world")
	ed.Entities = []tgbotapi.MessageEntity{{Type: "italic", Offset: 6, Length: 5}}
	if _, err := bot.Send(ed); err != nil {
		t.Fatalf("edit of the entities only: %v", err)
	}
	if _, err := bot.Send(ed); err == nil || !strings.Contains(err.Error(), "message is not modified") {
		t.Fatalf("same edit again: %v, want message is not modified", err)
	}
	got, _ := srv.Message(42, int64(m.MessageID))
	if got.Entities != `[{"type":"italic","offset":6,"length":5}]` {
		t.Fatalf("entities %s", got.Entities)
	}
}
