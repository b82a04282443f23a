package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// repliesAddress is a platform where a reply to the bot's message
// addresses it in groups (dispatch.ReplyAddressed).
type repliesAddress struct{ *outbox }

func (repliesAddress) RepliesAddressBot() {}

func TestHelpSaysHowTheChatsPlatformAddressesTheBot(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.engine.Register("replies", repliesAddress{&outbox{}})
	h.engine.Register("mentions", &outbox{})
	for _, tc := range []struct {
		channel string
		want    string
	}{
		{"replies", "(in groups: mention me or reply to my message)"},
		{"mentions", "(in groups: mention me)"},
		{"unregistered", "(in groups: mention me)"},
	} {
		req := dispatch.RequestContext{Channel: tc.channel, ChatID: "1", ChatKey: tc.channel + ":chat:1", ChatType: "group", UserID: "u1"}
		help, ok := h.engine.Command(context.Background(), "help", "", req)
		if !ok || !strings.Contains(help, tc.want) {
			t.Errorf("/help in a %s chat: %q %v; want it to say %q", tc.channel, help, ok, tc.want)
		}
	}
}
