package agent

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// agentMD reads the operator's Agent.md, re-reading it only when it changed,
// so an edit takes effect on the next message without a restart.
type agentMD struct {
	path string

	mu      sync.Mutex
	modTime time.Time
	size    int64
	text    string
}

func (a *agentMD) load() (string, error) {
	if a.path == "" {
		return "", nil
	}
	st, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Agent.md: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st.ModTime().Equal(a.modTime) && st.Size() == a.size {
		return a.text, nil
	}
	b, err := os.ReadFile(a.path)
	if err != nil {
		return "", fmt.Errorf("reading Agent.md: %w", err)
	}
	a.modTime, a.size, a.text = st.ModTime(), st.Size(), strings.TrimSpace(string(b))
	return a.text, nil
}

// The prompt is laid out stable-first, so that a provider's prefix cache
// (OpenAI's automatic one, Anthropic's cache_control breakpoints) reuses
// everything but the last turn: the system message holds only what stays
// the same across a chat's turns (Agent.md, the reply rules, which chat
// this is, the skills, the notes, the summary), the history follows, and
// what changes every turn (the time, who is speaking) comes last, in its
// own message just before the user's, never stored in history.

// stablePrompt is the part of the system prompt ship writes that is the
// same for every turn of a chat: where the chat is and how to reply.
func stablePrompt(chatKey string, req dispatch.RequestContext, hasChannel bool) string {
	var b strings.Builder
	b.WriteString("# Chat\n")
	if req.Channel != "" {
		fmt.Fprintf(&b, "- Channel: %s\n", req.Channel)
	}
	fmt.Fprintf(&b, "- Chat: %s\n", chatKey)
	if req.ChatType != "" {
		fmt.Fprintf(&b, "- Chat type: %s\n", req.ChatType)
	}
	b.WriteString("- The current time and who is speaking are given just before each message, in a [ship runtime] note that is not from the user.\n")
	b.WriteString("\n# How to reply\n")
	if hasChannel {
		b.WriteString("- Everything the user should see must be sent with the chat_send tool. Text you write without calling chat_send may never reach the user.\n")
		b.WriteString("- Send the complete answer in one chat_send call unless it is naturally several messages.\n")
	} else {
		b.WriteString("- Answer with plain text.\n")
	}
	b.WriteString("- Do not prefix your reply with your name or a role label.\n")
	b.WriteString("- The conversation above holds only recent turns. When the user refers to something earlier that you cannot see, call chat_load_history (optionally with a keyword) before answering.\n")
	return b.String()
}

// runtimeNote is what changes every turn: the time (to the minute: finer
// would tell the model nothing it needs) and who is speaking. It goes in
// a message of its own right before the user's, so the user's text stays
// verbatim and everything before it can be cached.
func runtimeNote(now time.Time, req dispatch.RequestContext) string {
	var b strings.Builder
	b.WriteString("[ship runtime — not from the user]\n")
	fmt.Fprintf(&b, "- Current time: %s\n", now.Format("2006-01-02 15:04 Mon MST (-07:00)"))
	if req.Username != "" || req.UserID != "" {
		fmt.Fprintf(&b, "- Speaking: %s (id %s)\n", req.Username, req.UserID)
	}
	return b.String()
}

func systemPrompt(agentText, def string) string {
	if agentText == "" {
		return def
	}
	return agentText + "\n\n" + def
}
