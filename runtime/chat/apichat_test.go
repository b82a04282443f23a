package chat_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
)

func TestAPIChatKeyAcceptsSafeIDsOnly(t *testing.T) {
	for _, id := range []string{"default", "cli", "team.ops_1:alice@x-y", strings.Repeat("a", 128)} {
		if key, err := chat.APIChatKey(id); err != nil || key != "api:chat:"+id {
			t.Errorf("APIChatKey(%q) = %q, %v", id, key, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("a", 129), "a/b", "../x", "a b", "ä", "a\x00"} {
		if _, err := chat.APIChatKey(id); !errors.Is(err, chat.ErrInvalidChatID) {
			t.Errorf("APIChatKey(%q) err = %v, want ErrInvalidChatID", id, err)
		}
	}
}

func TestAPIChatIDUndoesAPIChatKey(t *testing.T) {
	for _, id := range []string{"default", "console", "team.ops_1:alice@x-y"} {
		key, _ := chat.APIChatKey(id)
		if got, ok := chat.APIChatID(key); !ok || got != id {
			t.Errorf("APIChatID(%q) = %q, %v", key, got, ok)
		}
	}
	for _, key := range []string{"telegram:chat:1", "api:chat:", "api:chat:a b", "api:x"} {
		if id, ok := chat.APIChatID(key); ok {
			t.Errorf("APIChatID(%q) = %q, true; want not an api chat", key, id)
		}
	}
}
