package dispatch_test

import (
	"context"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// plain is a platform with none of the optional abilities.
type plain struct{}

func (plain) SendText(context.Context, dispatch.RequestContext, string) error { return nil }

// answering takes a bot's post only as a reply, within a window.
type answering struct{ plain }

func (answering) TaskRoute(last dispatch.RequestContext) dispatch.RequestContext { return last }
func (answering) ReplyWindowHint(r dispatch.RequestContext) string {
	return "replies only, in " + r.ChatType + " chats within an hour"
}

type replyAddressed struct{ plain }

func (replyAddressed) RepliesAddressBot() {}

func TestPlatformRulesDefaultToNoneWithoutTheCapability(t *testing.T) {
	last := dispatch.RequestContext{Channel: "x", ChatID: "C", ChatKey: "x:chat:C", ChatType: "group", ThreadID: "T", MessageID: "M"}
	asNew := last
	asNew.MessageID = ""
	for _, tc := range []struct {
		name      string
		d         dispatch.Dispatcher
		route     dispatch.RequestContext
		hint      string
		addressed bool
	}{
		{"plain: a new message, no window, mentions only", plain{}, asNew, "", false},
		{"none registered: as plain", nil, asNew, "", false},
		{"its own rules", answering{}, last, "replies only, in group chats within an hour", false},
		{"replies address the bot", replyAddressed{}, asNew, "", true},
	} {
		if got := dispatch.TaskRoute(tc.d, last); got != tc.route {
			t.Errorf("%s: TaskRoute %+v, want %+v", tc.name, got, tc.route)
		}
		if got := dispatch.ReplyWindowHint(tc.d, last); got != tc.hint {
			t.Errorf("%s: ReplyWindowHint %q, want %q", tc.name, got, tc.hint)
		}
		if got := dispatch.ReplyAddressesBot(tc.d); got != tc.addressed {
			t.Errorf("%s: ReplyAddressesBot %v, want %v", tc.name, got, tc.addressed)
		}
	}
}
