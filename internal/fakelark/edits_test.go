package fakelark_test

import (
	"fmt"
	"net/http"
	"testing"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/internal/fakelark"
)

const (
	sharedCard  = `{"config":{"update_multi":true},"elements":[{"tag":"div","text":{"tag":"plain_text","content":"%s"}}]}`
	privateCard = `{"elements":[{"tag":"markdown","content":"%s"}]}`
)

func createCard(t *testing.T, cli *lark.Client, chatID, card string) string {
	t.Helper()
	resp, err := cli.Im.V1.Message.Create(ctx(t), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatID).MsgType("interactive").Content(card).Build()).Build())
	if err != nil || resp.Code != 0 {
		t.Fatalf("create card: %v %+v", err, resp)
	}
	return *resp.Data.MessageId
}

func patch(t *testing.T, cli *lark.Client, id, card string) *larkim.PatchMessageResp {
	t.Helper()
	resp, err := cli.Im.V1.Message.Patch(ctx(t), larkim.NewPatchMessageReqBuilder().MessageId(id).
		Body(larkim.NewPatchMessageReqBodyBuilder().Content(card).Build()).Build())
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	return resp
}

func TestCardsAreUpdatedAndDeleted(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	id := createCard(t, cli, "oc_1", fmt.Sprintf(sharedCard, "one"))
	if r := patch(t, cli, id, fmt.Sprintf(sharedCard, "one two")); r.Code != 0 {
		t.Fatalf("patch: code %d %s", r.Code, r.Msg)
	}
	if u := s.Updates(id); len(u) != 1 || u[0].Text != "one two" {
		t.Errorf("updates %+v", u)
	}
	if c := s.Chat("oc_1"); len(c) != 1 || c[0].Text != "one two" || c[0].Updates != 1 || c[0].MsgType != "interactive" {
		t.Errorf("chat %+v", c)
	}
	// The real limits: shared cards only, before and after; cards only.
	if r := patch(t, cli, id, fmt.Sprintf(privateCard, "x")); r.Code != fakelark.CodeBadRequest {
		t.Errorf("update to a card without update_multi: code %d", r.Code)
	}
	private := createCard(t, cli, "oc_1", fmt.Sprintf(privateCard, "p"))
	if r := patch(t, cli, private, fmt.Sprintf(sharedCard, "x")); r.Code != fakelark.CodeBadRequest {
		t.Errorf("update of a card sent without update_multi: code %d", r.Code)
	}
	text := createText(t, cli, "oc_1", "plain", "")
	if r := patch(t, cli, *text.Data.MessageId, fmt.Sprintf(sharedCard, "x")); r.Code != fakelark.CodeNotCard {
		t.Errorf("update of a text message: code %d", r.Code)
	}
	s.FailNext(fakelark.PathUpdate, 1, fakelark.CodeRateLimit, "request trigger frequency limit")
	r := patch(t, cli, id, fmt.Sprintf(sharedCard, "y"))
	if r.Code != fakelark.CodeRateLimit || r.StatusCode != http.StatusTooManyRequests || r.Header.Get("X-Ogw-Ratelimit-Reset") != "1" {
		t.Errorf("injected rate limit: code %d status %d reset %q", r.Code, r.StatusCode, r.Header.Get("X-Ogw-Ratelimit-Reset"))
	}

	del, err := cli.Im.V1.Message.Delete(ctx(t), larkim.NewDeleteMessageReqBuilder().MessageId(id).Build())
	if err != nil || del.Code != 0 {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if err := s.WaitDeleted(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if r := patch(t, cli, id, fmt.Sprintf(sharedCard, "z")); r.Code != fakelark.CodeMessageGone {
		t.Errorf("update of a deleted card: code %d", r.Code)
	}
	if c := s.Chat("oc_1"); len(c) != 2 || c[0].MessageID == id {
		t.Errorf("chat after the delete %+v", c)
	}
}

func TestReactionsAreAddedListedAndDeleted(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	ev := s.P2PText("oc_1", "ou_ann", "hi")
	s.Know(ev)
	for i := range 25 {
		s.React(ev.MessageID, "Typing", "user", fmt.Sprintf("ou_%d", i))
	}
	add := func() string {
		resp, err := cli.Im.V1.MessageReaction.Create(ctx(t), larkim.NewCreateMessageReactionReqBuilder().MessageId(ev.MessageID).
			Body(larkim.NewCreateMessageReactionReqBodyBuilder().ReactionType(larkim.NewEmojiBuilder().EmojiType("Typing").Build()).Build()).Build())
		if err != nil || resp.Code != 0 || *resp.Data.Operator.OperatorType != "app" || *resp.Data.Operator.OperatorId != s.AppID() {
			t.Fatalf("create reaction: %v %+v", err, resp)
		}
		return *resp.Data.ReactionId
	}
	mine := add()
	if again := add(); again != mine {
		t.Errorf("the same reaction again got id %s, want %s", again, mine)
	}
	// Listing pages by the server's token, 20 a page by default.
	var found []string
	token := ""
	for pages := 0; ; pages++ {
		b := larkim.NewListMessageReactionReqBuilder().MessageId(ev.MessageID).ReactionType("Typing")
		if token != "" {
			b.PageToken(token)
		}
		resp, err := cli.Im.V1.MessageReaction.List(ctx(t), b.Build())
		if err != nil || resp.Code != 0 || pages > 3 {
			t.Fatalf("list: %v %+v", err, resp)
		}
		for _, it := range resp.Data.Items {
			found = append(found, *it.ReactionId)
		}
		if !*resp.Data.HasMore {
			break
		}
		token = *resp.Data.PageToken
	}
	if len(found) != 26 || found[25] != mine {
		t.Errorf("listed %d reactions, the app's last: %v", len(found), found)
	}
	del := func(id string) int {
		resp, err := cli.Im.V1.MessageReaction.Delete(ctx(t), larkim.NewDeleteMessageReactionReqBuilder().
			MessageId(ev.MessageID).ReactionId(id).Build())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Code
	}
	if code := del(found[0]); code == 0 {
		t.Error("the app deleted a user's reaction")
	}
	if code := del(mine); code != 0 {
		t.Errorf("deleting the app's reaction: code %d", code)
	}
	if rs := s.Reactions(ev.MessageID); len(rs) != 25 {
		t.Errorf("%d reactions left, want the users' 25", len(rs))
	}
	h := s.ReactionHistory(ev.MessageID)
	if len(h) != 26 || h[25].ReactionID != mine || h[25].Removed.IsZero() || !h[0].Removed.IsZero() {
		t.Errorf("history: %d reactions, the app's removed at %v", len(h), h[len(h)-1].Removed)
	}
}
