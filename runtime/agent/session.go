package agent

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/chat"
)

// HistoryLimits bound the in-memory history.
type HistoryLimits struct {
	MaxChats    int // chats kept in memory; least recently used go first. 0 → 500
	MaxMessages int // messages kept per chat. 0 → 60
	MaxChars    int // characters kept per chat. 0 → 48,000
	// MaxToolOutput caps one tool result as kept in history (the run itself
	// saw all of it). 0 → 4,000.
	MaxToolOutput int
}

func (l HistoryLimits) withDefaults() HistoryLimits {
	if l.MaxChats <= 0 {
		l.MaxChats = 500
	}
	if l.MaxMessages <= 0 {
		l.MaxMessages = 60
	}
	if l.MaxChars <= 0 {
		l.MaxChars = 48_000
	}
	if l.MaxToolOutput <= 0 {
		l.MaxToolOutput = 4_000
	}
	return l
}

// exchange is one turn of the conversation: the user message and everything
// the run produced.
// History is trimmed by whole turns, so a tool call never loses its result.
type exchange []llms.MessageContent

type session struct {
	key   string
	turns []exchange
	// summary stands in for the turns dropped before these ("" for none).
	summary string
	// pending are turns dropped while summaries failed, to go into the
	// next summary that works.
	pending []exchange
	// epoch changes whenever the history is replaced from outside a run
	// (/clear, a rebuild after eviction): a run that read an older epoch
	// must not write its view back over it.
	epoch uint64
}

func (s *session) messages() []llms.MessageContent {
	var out []llms.MessageContent
	for _, t := range s.turns {
		out = append(out, t...)
	}
	return out
}

// sessions is the LRU of in-memory chat histories.
type sessions struct {
	limits HistoryLimits
	store  chat.Log

	mu     sync.Mutex
	lru    *list.List // of *session, most recent first
	m      map[string]*list.Element
	epochs uint64 // the last epoch handed out
}

func newSessions(limits HistoryLimits, store chat.Log) *sessions {
	return &sessions{limits: limits.withDefaults(), store: store, lru: list.New(), m: make(map[string]*list.Element)}
}

// history returns a copy of the chat's turns, the summary of the turns
// before them and their epoch (for update), rebuilding them from the
// ChatStore when the chat is not in memory (after a restart or eviction).
// currentText and currentID identify the message being handled, which is
// already in the store and must not appear as history.
// built, when not nil, tells how a session was built for this call: nil
// when the chat was in memory.
func (ss *sessions) history(ctx context.Context, chatKey, currentText, currentID string) (mem chatMemory, epoch uint64, built *SessionBuilt, err error) {
	ss.mu.Lock()
	if el, ok := ss.m[chatKey]; ok {
		ss.lru.MoveToFront(el)
		s := el.Value.(*session)
		mem := chatMemory{turns: append([]exchange(nil), s.turns...), summary: s.summary, pending: s.pending}
		ss.mu.Unlock()
		return mem, s.epoch, nil, nil
	}
	ss.mu.Unlock()

	turns, summary, existed, err := ss.rebuild(ctx, chatKey, currentText, currentID)
	if err != nil {
		return chatMemory{}, 0, nil, err
	}
	built = &SessionBuilt{Resumed: existed}
	for _, t := range turns {
		built.Restored += len(t)
	}
	return chatMemory{turns: turns, summary: summary}, ss.replace(chatKey, turns, summary), built, nil
}

// SessionBuilt says how a chat's in-memory session was built: Resumed
// when its log already held entries before the message being handled
// (a restart, an eviction), with Restored messages taken back into
// history; otherwise the chat is new.
type SessionBuilt struct {
	Resumed  bool
	Restored int
}

// chatMemory is what a run reads of its chat's history: the turns, the
// summary of those before them, and turns dropped but not yet summarised.
type chatMemory struct {
	turns   []exchange
	summary string
	pending []exchange
}

// rebuild reads a chat's history back from its log: the turns after the
// last /clear, where the latest summary stands for the turns it covers
// (all but its keptTurns before it).
func (ss *sessions) rebuild(ctx context.Context, chatKey, currentText, currentID string) (turns []exchange, summary string, existed bool, err error) {
	if ss.store == nil {
		return nil, "", false, nil
	}
	// The latest summary lies at most a block and a full history back.
	// The log holds more than the conversation (tool calls, each run's
	// usage, unaddressed group messages, the current message): twice
	// that, and some.
	entries, err := ss.store.Recent(ctx, chatKey, 4*ss.limits.MaxMessages+64)
	if err != nil {
		return nil, "", false, fmt.Errorf("rebuilding history of %s: %w", chatKey, err)
	}
	cut := len(entries)
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Role != chat.RoleUser {
			continue
		}
		if (currentID != "" && e.MessageID == currentID) || (currentID == "" && e.Text == currentText) {
			cut = i
			break
		}
	}
	existed = cut > 0
	// History starts after the last /clear: the user asked to forget it.
	start := 0
	for i := cut - 1; i >= 0; i-- {
		if entries[i].Role == chat.RoleSystem && entries[i].Meta["event"] == chat.EventClear {
			start = i + 1
			break
		}
	}
	entries = entries[start:cut]
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Role != chat.RoleSummary {
			continue
		}
		kept := 0
		if n, ok := entries[i].Meta["keptTurns"].(float64); ok && n > 0 {
			kept = int(n)
		}
		before := turnsOf(entries[:i])
		if len(before) > kept {
			before = before[len(before)-kept:]
		}
		return append(before, turnsOf(entries[i+1:])...), entries[i].Text, existed, nil
	}
	// No summary yet (or a chat from before summaries): the newest turns
	// that fit, as the prompt always held.
	turns = turnsOf(entries)
	return turns[excess(turns, ss.limits.MaxMessages, ss.limits.MaxChars):], "", existed, nil
}

// turnsOf rebuilds the turns of log entries: each user message with the
// replies after it. A message the queue refused is followed by a system
// entry with its id; it was never answered and is no part of the
// conversation.
func turnsOf(entries []chat.ChatLogEntryV1) []exchange {
	refused := map[string]bool{}
	for _, e := range entries {
		if e.Role == chat.RoleSystem && e.MessageID != "" {
			refused[e.MessageID] = true
		}
	}
	var turns []exchange
	for _, e := range entries {
		switch e.Role {
		case chat.RoleUser:
			if e.MessageID != "" && refused[e.MessageID] {
				continue
			}
			turns = append(turns, exchange{llms.TextParts(llms.ChatMessageTypeHuman, e.Text)})
		case chat.RoleAssistant:
			msg := llms.TextParts(llms.ChatMessageTypeAI, e.Text)
			if len(turns) == 0 {
				turns = append(turns, exchange{msg})
			} else {
				turns[len(turns)-1] = append(turns[len(turns)-1], msg)
			}
		}
	}
	return turns
}

// update stores a run's turns and summary as the chat's history (settled
// by the caller), if the history is still the one the run read (epoch).
// After a /clear during the run, or an eviction, it stores nothing: the
// log keeps the turn, and history rebuilt from it starts after the /clear.
func (ss *sessions) update(chatKey string, mem chatMemory, epoch uint64) {
	mem.turns = append([]exchange(nil), mem.turns...)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	el, ok := ss.m[chatKey]
	if !ok || el.Value.(*session).epoch != epoch {
		return
	}
	s := el.Value.(*session)
	s.turns, s.summary, s.pending = mem.turns, mem.summary, mem.pending
	ss.lru.MoveToFront(el)
}

// replace sets the chat's history under a new epoch and returns it.
func (ss *sessions) replace(chatKey string, turns []exchange, summary string) uint64 {
	turns = append([]exchange(nil), turns...)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.epochs++
	if el, ok := ss.m[chatKey]; ok {
		s := el.Value.(*session)
		s.turns, s.summary, s.pending, s.epoch = turns, summary, nil, ss.epochs
		ss.lru.MoveToFront(el)
		return ss.epochs
	}
	ss.m[chatKey] = ss.lru.PushFront(&session{key: chatKey, turns: turns, summary: summary, epoch: ss.epochs})
	for ss.lru.Len() > ss.limits.MaxChats {
		oldest := ss.lru.Back()
		ss.lru.Remove(oldest)
		delete(ss.m, oldest.Value.(*session).key)
	}
	return ss.epochs
}

// forget empties the chat's in-memory history; the ChatStore keeps its log.
// The chat stays in memory as empty, so it is not rebuilt from the log, and
// a run under way does not write its older view back.
func (ss *sessions) forget(chatKey string) { ss.replace(chatKey, nil, "") }

// len is the number of chats in memory.
func (ss *sessions) len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.lru.Len()
}

// split divides turns into those to keep and the block to drop (and so
// to summarise): within the limits nothing goes; once over a limit, the
// oldest turns go until the history is within half of both limits.
// Dropping one turn per turn would change the start of the prompt at every
// turn, and with it everything a provider's prefix cache could reuse; a
// block keeps the prefix the same for the many turns it takes to fill the
// other half. The newest turn is always kept.
func (ss *sessions) split(turns []exchange) (kept, dropped []exchange) {
	if excess(turns, ss.limits.MaxMessages, ss.limits.MaxChars) == 0 {
		return turns, nil
	}
	i := excess(turns, ss.limits.MaxMessages/2, ss.limits.MaxChars/2)
	return turns[i:], turns[:i]
}

// excess is how many of the oldest turns must go for the rest to hold at
// most maxMsgs messages and maxChars characters; the newest turn always
// stays.
func excess(turns []exchange, maxMsgs, maxChars int) int {
	msgs, chars := 0, 0
	for _, t := range turns {
		msgs += len(t)
		chars += turnChars(t)
	}
	i := 0
	for i < len(turns)-1 && (msgs > maxMsgs || chars > maxChars) {
		msgs -= len(turns[i])
		chars -= turnChars(turns[i])
		i++
	}
	return i
}

func turnChars(t exchange) int {
	n := 0
	for _, m := range t {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				n += len(p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					n += len(p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				n += len(p.Content)
			}
		}
	}
	return n
}

// compactTurn shortens tool results before they are kept as history.
func compactTurn(t exchange, maxToolOutput int) exchange {
	out := make(exchange, len(t))
	for i, m := range t {
		out[i] = m
		if m.Role != llms.ChatMessageTypeTool {
			continue
		}
		parts := make([]llms.ContentPart, len(m.Parts))
		for j, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok && len(r.Content) > maxToolOutput {
				r.Content = truncateUTF8(r.Content, maxToolOutput) + "…(truncated)"
				p = r
			}
			parts[j] = p
		}
		out[i].Parts = parts
	}
	return out
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
