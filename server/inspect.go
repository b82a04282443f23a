package server

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/engine"
)

type chatSummary struct {
	ChatKey      string `json:"chatKey"`
	LastActivity int64  `json:"lastActivity"` // ms since the epoch
	Messages     int    `json:"messages"`
}

// Limits of the inspection routes: they read the chat logs on request.
const (
	defaultChatsLimit    = 100
	maxChatsLimit        = 1000
	defaultMessagesLimit = 50
	maxMessagesLimit     = 500
)

// handleChats lists chats with their last activity and message count,
// most recently active first.
func (s *Server) handleChats(w http.ResponseWriter, r *http.Request) {
	limit, ierr := intParam(r, "limit", defaultChatsLimit, maxChatsLimit)
	if ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	view := s.opts.View
	keys, err := view.ChatKeys(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	out := make([]chatSummary, 0, len(keys))
	for _, k := range keys {
		st, err := view.ChatStats(r.Context(), k)
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		out = append(out, chatSummary{ChatKey: k, LastActivity: st.LastTS, Messages: st.Entries})
	}
	slices.SortStableFunc(out, func(a, b chatSummary) int { return int(b.LastActivity - a.LastActivity) })
	if len(out) > limit {
		out = out[:limit]
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"chats": out})
}

// handleMessages returns a chat's last messages (oldest first), or with
// keyword= the newest matches (also from archived segments), oldest first.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("chatKey")
	if _, err := chat.EscapeChatKey(key); err != nil {
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, "chatKey is not valid")
		return
	}
	limit, ierr := intParam(r, "limit", defaultMessagesLimit, maxMessagesLimit)
	if ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	view := s.opts.View
	var entries []chat.ChatLogEntryV1
	var err error
	if kw := r.URL.Query().Get("keyword"); kw != "" {
		entries, err = view.Search(r.Context(), key, kw, limit)
		slices.Reverse(entries)
	} else {
		entries, err = view.Recent(r.Context(), key, limit)
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if len(entries) == 0 {
		keys, err := view.ChatKeys(r.Context())
		if err != nil {
			s.internalError(w, r, err)
			return
		}
		if !slices.Contains(keys, key) {
			writeError(w, r, http.StatusNotFound, codeNotFound, "no chat "+key)
			return
		}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"chatKey": key, "messages": entries})
}

func intParam(r *http.Request, name string, def, max int) (int, *inputError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, invalid("%s must be a whole number from 1 to %d", name, max)
	}
	return n, nil
}

func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, r.Context().Err()) {
		return // the client left
	}
	s.log.Error().Err(err).Str("requestId", requestID(r.Context())).Msg("reading the chat store")
	writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
}

// handleTools lists the tools with their effective policy:
// GET /api/tools?chatKey=telegram:chat:-100123&user=telegram:42&command=git+status
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user, chatKey, command := q.Get("user"), q.Get("chatKey"), q.Get("command")
	if user != "" && !strings.Contains(user, ":") {
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, `user must be "channel:userId", like "telegram:123456"`)
		return
	}
	if len(user) > maxIDChars || len(chatKey) > 512 || len(command) > 64<<10 {
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, "user, chatKey or command is too long")
		return
	}
	answer := toolsAnswer{ToolsReport: s.opts.View.Tools(chatKey, user, command)}
	if sb, ok := s.opts.View.Sandbox(); ok {
		answer.Sandbox = sb
	}
	writeJSON(w, r, http.StatusOK, answer)
}

// toolsAnswer is GET /api/tools: the report, and exec_shell's sandbox when
// exec_shell is there (tools.SandboxStatus; left out when nil).
type toolsAnswer struct {
	engine.ToolsReport
	Sandbox any `json:"sandbox,omitempty"`
}
