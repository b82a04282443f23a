package console

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
)

// The api chat the console talks in by default.
const (
	consoleChatID  = "console"
	consoleChatKey = chat.ChannelAPI + ":chat:" + consoleChatID
)

// Bounds of what one page reads from the chat logs.
const (
	maxSearchHits   = 100
	hitsPerChat     = 5
	defaultEntries  = 100
	maxEntries      = 1000
	titleScanLength = 20
)

type chatRow struct {
	Key, Channel, Title, Kind string
	Last                      chat.ChatLogEntryV1
	LastAt                    time.Time
}

type chatsData struct {
	Query, Platform string
	Platforms       []string
	Chats           []chatRow
	Hits            []entryView
	Searched        bool
	More            bool
	ConsoleKey      string
	// From is how many more recent chats this page skips; Total is how
	// many chats there are (preview.go pages them).
	From, Total int
}

// handleChats lists every chat, most recently active first; with q= it
// searches the chat logs (the ChatStore's search) for the keyword.
func (c *Console) handleChats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	view := c.opts.View
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	platform := r.URL.Query().Get("platform")
	keys, err := view.ChatKeys(ctx)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := chatsData{Query: q, Platform: platform, ConsoleKey: consoleChatKey}
	seen := map[string]bool{}
	for _, k := range keys {
		ch := channelOf(k)
		if !seen[ch] {
			seen[ch] = true
			d.Platforms = append(d.Platforms, ch)
		}
	}
	slices.Sort(d.Platforms)
	keys = slices.DeleteFunc(keys, func(k string) bool { return platform != "" && channelOf(k) != platform })

	if q != "" {
		d.Searched = true
		for _, k := range keys {
			hits, err := view.Search(ctx, k, q, hitsPerChat)
			if err != nil {
				c.fail(w, r, err)
				return
			}
			for _, h := range hits {
				d.Hits = append(d.Hits, clipHit(c.view(h)))
			}
		}
		slices.SortStableFunc(d.Hits, func(a, b entryView) int { return b.At.Compare(a.At) })
		if len(d.Hits) > maxSearchHits {
			d.Hits, d.More = d.Hits[:maxSearchHits], true
		}
		c.render(w, r, "Search: "+q, d.write)
		return
	}
	for _, k := range keys {
		recent, err := view.Recent(ctx, k, titleScanLength)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if len(recent) == 0 {
			continue
		}
		last := recent[len(recent)-1]
		title, kind := chatTitle(k, recent)
		d.Chats = append(d.Chats, chatRow{Key: k, Channel: channelOf(k), Title: title, Kind: kind,
			Last: last, LastAt: time.UnixMilli(last.TS)})
	}
	slices.SortStableFunc(d.Chats, func(a, b chatRow) int { return b.LastAt.Compare(a.LastAt) })
	d.Total = len(d.Chats)
	d.From = pageFrom(r.URL.Query().Get("from"))
	if d.From >= d.Total { // past the end (chats went away): the last page
		d.From = max(d.Total-1, 0) / chatsPerPage * chatsPerPage
	}
	d.Chats = d.Chats[d.From:min(d.From+chatsPerPage, d.Total)]
	c.render(w, r, "Chats", d.write)
}

// channelOf is the platform part of a chatKey ("telegram:chat:42").
func channelOf(key string) string {
	ch, _, _ := strings.Cut(key, ":")
	return ch
}

// chatTitle names a chat from what its log knows: the person in a private
// chat, else the kind of chat and its id (and topic).
func chatTitle(key string, recent []chat.ChatLogEntryV1) (title, kind string) {
	var chatID, user, userID string
	var thread any
	for _, e := range slices.Backward(recent) {
		if e.Role != chat.RoleUser {
			continue
		}
		chatID, userID = e.ChatID, e.UserID
		if k, ok := e.Meta["chatType"].(string); ok {
			kind = k
		}
		if u, ok := e.Meta["username"].(string); ok {
			user = u
		}
		if t, ok := e.Meta["messageThreadId"]; ok {
			thread = t
		} else if t, ok := e.Meta["threadId"]; ok {
			thread = t
		}
		break
	}
	apiID, api := chat.APIChatID(key)
	switch {
	case api:
		if apiID == consoleChatID {
			return "Console chat", "api"
		}
		return "API chat " + apiID, "api"
	case kind == "private" || kind == "p2p" || kind == "c2c":
		switch {
		case user != "":
			return user, kind
		case userID != "":
			return "user " + userID, kind
		}
	case chatID != "" && thread != nil:
		return fmt.Sprintf("%s %s · topic %v", kindName(kind), chatID, thread), kind
	case chatID != "":
		return kindName(kind) + " " + chatID, kind
	}
	return key, kind
}

func kindName(kind string) string {
	switch kind {
	case "", "group", "supergroup":
		return "Group"
	case "guild", "channel":
		return "Channel"
	}
	return strings.ToUpper(kind[:1]) + kind[1:]
}

type chatData struct {
	Key, Title, Kind, Channel string
	Entries                   []entryView
	Limit, MoreLimit          int
	Older                     bool // the log may hold more than Limit entries
	CanSend                   bool
	Pending                   []pendingView
}

// handleChat shows one chat's log; its live part follows the chat's
// events (see console.js).
func (c *Console) handleChat(w http.ResponseWriter, r *http.Request) {
	if d, ok := c.loadChat(w, r, r.PathValue("key")); ok {
		c.render(w, r, d.Title, func(m *markup) { c.writeChat(m, d) })
	}
}

// handleEntries is the chat log part of the Chat page, which it reloads
// when the chat's events say the log grew.
func (c *Console) handleEntries(w http.ResponseWriter, r *http.Request) {
	if d, ok := c.loadChat(w, r, r.URL.Query().Get("chat")); ok {
		var m markup
		c.entries(&m, d)
		c.write(w, http.StatusOK, &m)
	}
}

// loadChat reads what the Chat page shows of key, or answers why it
// cannot (not a chat key, no such chat, a failed read) and returns false.
func (c *Console) loadChat(w http.ResponseWriter, r *http.Request, key string) (chatData, bool) {
	if _, err := chat.EscapeChatKey(key); err != nil {
		plain(w, http.StatusBadRequest, "That is not a chat key.")
		return chatData{}, false
	}
	d, ok, err := c.chat(r, key)
	switch {
	case err != nil:
		c.fail(w, r, err)
	case !ok:
		plain(w, http.StatusNotFound, "There is no chat "+key+".")
	}
	return d, err == nil && ok
}

// chat reads what the Chat page shows. ok is false for a chat that has no
// log, but for the api chats, which anyone may start from the console.
func (c *Console) chat(r *http.Request, key string) (chatData, bool, error) {
	limit := defaultEntries
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		limit = min(n, maxEntries)
	}
	entries, err := c.opts.View.Recent(r.Context(), key, limit)
	if err != nil {
		return chatData{}, false, err
	}
	_, api := chat.APIChatID(key)
	if len(entries) == 0 && !api {
		keys, err := c.opts.View.ChatKeys(r.Context())
		if err != nil || !slices.Contains(keys, key) {
			return chatData{}, false, err
		}
	}
	title, kind := chatTitle(key, entries)
	d := chatData{Key: key, Title: title, Kind: kind, Channel: channelOf(key), Limit: limit, MoreLimit: min(limit*5, maxEntries),
		Older: len(entries) == limit, CanSend: api}
	for _, e := range entries {
		d.Entries = append(d.Entries, c.view(e))
	}
	open, err := c.opts.View.Questions(r.Context(), key)
	if err != nil {
		// The log is still worth showing; its questions show as closed.
		c.log.Warn().Err(err).Str("chatKey", key).Msg("listing a chat's open questions")
	}
	markQuestions(d.Entries, entries, open)
	pending, _ := c.opts.View.Pending(key)
	for _, p := range pending {
		d.Pending = append(d.Pending, pendingOf(p))
	}
	return d, true, nil
}

// handleSend queues a message from the console box as the api channel,
// in an api chat; the reply streams in over the chat's events.
func (c *Console) handleSend(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("chat") // read and checked by guard (readForm)
	id, ok := chat.APIChatID(key)
	if !ok {
		plain(w, http.StatusBadRequest, "The console sends only into api chats (api:chat:<id>).")
		return
	}
	text := r.PostFormValue("text")
	if strings.TrimSpace(text) == "" {
		plain(w, http.StatusBadRequest, "Write a message first.")
		return
	}
	if n := utf8.RuneCountInString(text); n > c.opts.MaxMessageChars {
		plain(w, http.StatusBadRequest, fmt.Sprintf("The message is %d characters; the limit is %d.", n, c.opts.MaxMessageChars))
		return
	}
	if err := c.send(r, key, id, text); err != nil {
		c.sendError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
