package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
)

// 300 chats whose last messages are long once made a 2.8 MB Chats page:
// previews are clipped to one short line and the list is paged, so the
// page stays small and every chat is still reachable.
func TestConsoleChatsPageStaysSmallWithManyLongChats(t *testing.T) {
	s := startShip(t)
	long := strings.Repeat("ünïcödé words and more words\n", 400) // ~11,600 runes over many lines
	for i := range 300 {
		key := fmt.Sprintf("api:chat:c%03d", i)
		for _, role := range []string{chat.RoleUser, chat.RoleAssistant} {
			if _, err := s.store.Append(context.Background(), chat.ChatLogEntryV1{
				Channel: chat.ChannelAPI, ChatID: fmt.Sprintf("c%03d", i), ChatKey: key, UserID: "u", Role: role,
				Text: fmt.Sprintf("chat %03d says: %s", i, long),
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := map[string]bool{}
	next := "/chats"
	for pages := 0; next != ""; pages++ {
		if pages == 5 {
			t.Fatal("more than 5 pages for 300 chats")
		}
		_, page := get(t, s.url+next)
		t.Logf("%s: %d KB", next, len(page)>>10)
		if len(page) > 200<<10 {
			t.Errorf("%s is %d KB, want under 200 KB", next, len(page)>>10)
		}
		for _, m := range lastSpans(page) {
			if n := utf8.RuneCountInString(m); n > 220 || !strings.HasSuffix(m, "…") || !utf8.ValidString(m) || strings.Contains(m, "\n") {
				t.Errorf("a preview of %d runes (want one line of ≤ 200 whole runes, clipped with …): %.80q", n, m)
				break
			}
		}
		for i := range 300 {
			if strings.Contains(page, fmt.Sprintf(`href="/chats/api:chat:c%03d"`, i)) {
				seen[fmt.Sprintf("c%03d", i)] = true
			}
		}
		next = nextLink(page)
	}
	if len(seen) != 300 {
		t.Errorf("the pages list %d of the 300 chats", len(seen))
	}
	_, first := get(t, s.url+"/chats")
	if !strings.Contains(first, `/chats/api:chat:c299"`) || strings.Contains(first, `/chats/api:chat:c000"`) {
		t.Error("the first page does not list the most recent chats first")
	}
}

// lastSpans returns the text of each preview on a Chats page.
func lastSpans(page string) []string {
	var out []string
	for _, part := range strings.Split(page, `<span class="last">`)[1:] {
		text, _, _ := strings.Cut(part, "</span>")
		out = append(out, text)
	}
	return out
}

// nextLink is the href of the page's rel="next" link ("" when none).
func nextLink(page string) string {
	i := strings.Index(page, `rel="next"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(page[:i], `href="`)
	if start < 0 {
		return ""
	}
	href, _, _ := strings.Cut(page[start+len(`href="`):], `"`)
	return strings.ReplaceAll(href, "&amp;", "&")
}
