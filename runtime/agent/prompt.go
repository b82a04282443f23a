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

// defaultPrompt carries what changes per request (time, where the message
// came from) and the reply rules. It is rebuilt for every request and never
// stored in history, so the history stays free of stale metadata.
func defaultPrompt(now time.Time, chatKey string, req dispatch.RequestContext, hasChannel bool) string {
	var b strings.Builder
	b.WriteString("# Runtime\n")
	fmt.Fprintf(&b, "- Current time: %s\n", now.Format("2006-01-02 15:04:05 Mon MST (-07:00)"))
	if req.Channel != "" {
		fmt.Fprintf(&b, "- Channel: %s\n", req.Channel)
	}
	fmt.Fprintf(&b, "- Chat: %s\n", chatKey)
	if req.ChatType != "" {
		fmt.Fprintf(&b, "- Chat type: %s\n", req.ChatType)
	}
	if req.Username != "" || req.UserID != "" {
		fmt.Fprintf(&b, "- Speaking: %s (id %s)\n", req.Username, req.UserID)
	}
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

func systemPrompt(agentText, def string) string {
	if agentText == "" {
		return def
	}
	return agentText + "\n\n" + def
}
