package contacts_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/ingress"
)

func msg(channel, chatKey, chatID, chatType, user, name, msgID string) ingress.Submission {
	return ingress.Submission{Channel: channel, ChatKey: chatKey, Message: ingress.IncomingChatMessage{
		ChatID: chatID, ChatType: chatType, UserID: user, Username: name, MessageID: msgID,
	}}
}

func TestTheBookPrefersThePrivateChatAndSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contacts.json")
	b, err := contacts.Open(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.Learn(ctx, msg("telegram", "telegram:chat:77", "77", "private", "77", "ann", "1"))
	b.Learn(ctx, msg("telegram", "telegram:chat:-1005", "-1005", "supergroup", "77", "ann", "9"))
	b.Learn(ctx, msg("api", "api:chat:x", "x", "api", "someone", "ann", "a"))
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}

	b2, err := contacts.Open(path, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	c, err := b2.Find("@ANN")
	if err != nil {
		t.Fatal(err)
	}
	if c.Identity != "telegram:77" || c.Last.ChatKey != "telegram:chat:-1005" || c.Best().ChatKey != "telegram:chat:77" {
		t.Errorf("contact = %+v", c)
	}
	if r := c.Best().Route(c); r.Channel != "telegram" || r.ChatID != "77" || r.UserID != "77" {
		t.Errorf("route = %+v", r)
	}
}

func TestSameNameOnTwoPlatformsIsAmbiguous(t *testing.T) {
	b, err := contacts.Open(filepath.Join(t.TempDir(), "c.json"), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.Learn(ctx, msg("telegram", "telegram:chat:1", "1", "private", "1", "sam", "1"))
	b.Learn(ctx, msg("feishu", "feishu:chat:oc_1", "oc_1", "p2p", "ou_1", "sam", "m1"))
	if _, err := b.Find("sam"); !errors.Is(err, contacts.ErrAmbiguous) {
		t.Errorf("Find(sam) = %v, want ambiguous", err)
	}
	if c, err := b.Find("feishu:ou_1"); err != nil || c.Best().Channel != "feishu" {
		t.Errorf("Find by identity = %+v, %v", c, err)
	}
	if _, err := b.Find("nobody"); !errors.Is(err, contacts.ErrNotFound) {
		t.Errorf("Find(nobody) = %v", err)
	}
}
