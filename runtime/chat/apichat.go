package chat

import (
	"errors"
	"fmt"
	"strings"
)

// ChatTypeAPI is the chat type of every message that comes in through the
// HTTP API (execute, send, the console): a one-to-one conversation.
const ChatTypeAPI = "api"

// MaxAPIChatIDLen bounds the chat id of the api channel.
const MaxAPIChatIDLen = 128

// ErrInvalidChatID is returned by APIChatKey for a chat id that is empty,
// too long or has a character outside A-Z a-z 0-9 . _ : @ -.
var ErrInvalidChatID = errors.New("chat id must be 1 to 128 characters of A-Z a-z 0-9 . _ : @ -")

// APIChatKey is the chatKey of chat id in the api channel (api:chat:<id>),
// the one rule the HTTP API and `ship chat` share.
func APIChatKey(id string) (string, error) {
	if id == "" || len(id) > MaxAPIChatIDLen {
		return "", fmt.Errorf("%q: %w", truncate(id, 32), ErrInvalidChatID)
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '-':
		default:
			return "", fmt.Errorf("%q: %w", truncate(id, 32), ErrInvalidChatID)
		}
	}
	return ChannelAPI + ":chat:" + id, nil
}

// APIChatID is the inverse of APIChatKey: the chat id of an api chatKey,
// and whether key is one (api:chat:<valid id>).
func APIChatID(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, ChannelAPI+":chat:")
	if !ok {
		return "", false
	}
	if _, err := APIChatKey(id); err != nil {
		return "", false
	}
	return id, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Identities of API callers in the tool policy. A platform user is
// "channel:userId", but an API body's userId is only what the caller says,
// so an api run acts as who its credential proves it is: these fixed
// identities, or a named token's own (server.tokens).
const (
	// APIAnonymous is every caller while no token is configured (the API
	// then answers on loopback only), whatever userId it sends. The tool
	// policy's "api:*" is not meant to cover it: anyone on the machine is
	// this caller, so a role names it exactly or not at all.
	APIAnonymous = ChannelAPI + ":anonymous"
	// APIToken is the holder of the single server token (SHIP_API_TOKEN).
	APIToken = ChannelAPI + ":token"
	// APIConsole is the web console's user when a token is configured
	// (signed in with it); without one the console is APIAnonymous.
	APIConsole = ChannelAPI + ":console"
)
