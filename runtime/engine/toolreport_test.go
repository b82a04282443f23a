package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/policy"
)

// GET /api/tools must tell the truth about what a run offers: the report
// and the run decide with the same function, so the tools a real run in
// an api chat or a group offers the model are exactly the ones the report
// marks offered there.
func TestTheToolsReportOffersWhatARealRunOffers(t *testing.T) {
	h := newHarness(t, harnessOptions{handler: fakeopenai.RunCommands, contacts: true})
	h.engine.Register(chat.ChannelAPI, h.out)
	for _, c := range []struct {
		channel, chatID, chatKey, chatType string
	}{
		{chat.ChannelAPI, "x", "api:chat:x", "api"},
		{testChannel, "-100", chatKeyOf("-100"), "group"},
	} {
		done := make(chan ingress.Outcome, 1)
		if _, err := h.engine.Submit(context.Background(), ingress.Submission{
			Channel: c.channel, ChatKey: c.chatKey,
			Message: ingress.IncomingChatMessage{ChatID: c.chatID, Text: "hello", MessageID: "m-" + c.chatID, UserID: "u1", ChatType: c.chatType},
			OnDone:  func(o ingress.Outcome) { done <- o },
		}); err != nil {
			t.Fatal(err)
		}
		<-done
		reqs := h.fake.Requests()
		var ran []string
		for _, tool := range reqs[len(reqs)-1].Tools {
			ran = append(ran, tool.Name)
		}
		var reported []string
		for _, ti := range h.engine.Tools(c.chatKey, c.channel+":u1", "").Tools {
			if ti.Offered {
				reported = append(reported, ti.Name)
			}
		}
		slices.Sort(ran)
		slices.Sort(reported)
		if !slices.Equal(ran, reported) {
			t.Errorf("%s: a run offered %v, /api/tools says %v", c.chatKey, ran, reported)
		}
		if want := c.chatType == "api"; slices.Contains(ran, "chat_contact_send") != want {
			t.Errorf("%s: chat_contact_send offered = %v, want %v", c.chatKey, !want, want)
		}
	}
}

// The policy package imports nothing of ship, so it names the anonymous
// API caller itself; the server names callers with chat's constant. They
// must be one identity, or no role rule about anonymous callers would hold.
func TestTheAnonymousAPIIdentityIsOneName(t *testing.T) {
	if chat.APIAnonymous != policy.AnonymousAPI {
		t.Fatalf("chat.APIAnonymous %q != policy.AnonymousAPI %q", chat.APIAnonymous, policy.AnonymousAPI)
	}
}
