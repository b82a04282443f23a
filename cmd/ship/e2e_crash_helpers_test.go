package main_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/faketelegram"
)

// crashModel is the fake model of TestE2ECrashRecovery: EchoChatSend after
// a short per-request delay drawn from a seeded rand (so that kills land in
// the middle of runs too), and, when armed, it holds the next request until
// the test has killed ship: a kill "inside the model call".
type crashModel struct {
	maxDelay time.Duration

	mu     sync.Mutex
	rng    *rand.Rand
	armed  *heldCall
	first  map[string]int // user text → requests without a tool result (run starts)
	second map[string]int // user text → requests after chat_send
}

// heldCall is one armed hold: entered receives the held request once it
// arrives; release lets it answer (into a dead connection, by then).
type heldCall struct {
	entered chan heldRequest
	done    chan struct{}
	release func() // closes done; safe to call more than once
}

// heldRequest says which request was held.
type heldRequest struct {
	text      string
	afterSend bool // the request carried chat_send's result: the reply was already sent
}

func newCrashModel(seed int64, maxDelay time.Duration) *crashModel {
	return &crashModel{maxDelay: maxDelay, rng: rand.New(rand.NewSource(seed)),
		first: map[string]int{}, second: map[string]int{}}
}

// handle is the fakeopenai.Handler.
func (m *crashModel) handle(r fakeopenai.Request) fakeopenai.Response {
	text := r.LastUser()
	afterSend := len(r.ToolResults()) > 0
	m.mu.Lock()
	delay := time.Duration(m.rng.Int63n(int64(m.maxDelay)) + 1)
	held := m.armed
	m.armed = nil
	if afterSend {
		m.second[text]++
	} else {
		m.first[text]++
	}
	m.mu.Unlock()
	if held != nil {
		held.entered <- heldRequest{text: text, afterSend: afterSend} // buffered, taken once
		<-held.done
	} else {
		time.Sleep(delay) // a slow model, not synchronisation
	}
	return fakeopenai.EchoChatSend(r)
}

// arm makes the next model request wait until the hold is released.
func (m *crashModel) arm() *heldCall {
	h := &heldCall{entered: make(chan heldRequest, 1), done: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.done) })
	m.mu.Lock()
	m.armed = h
	m.mu.Unlock()
	return h
}

// disarm withdraws h if no request has taken it yet and reports whether it
// did so.
func (m *crashModel) disarm(h *heldCall) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed == h {
		m.armed = nil
		return true
	}
	return false
}

// reruns returns how many runs were started more than once for one user
// text (extra first calls), and how many runs called the model again after
// chat_send more than once.
func (m *crashModel) reruns() (extraStarts, extraAfterSend, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.first {
		extraStarts += max(n-1, 0)
		total += n
	}
	for _, n := range m.second {
		extraAfterSend += max(n-1, 0)
		total += n
	}
	return extraStarts, extraAfterSend, total
}

// pushed is one message the feeder pushed.
type pushed struct {
	chat, n  int   // user (= private chat) id and the message's number in its chat, from 1
	msgID    int64 // the message_id the fake assigned
	updateID int64
	text     string // "c<chat>-m<n>"
}

// feeder pushes the messages of every chat, each chat's in order, in a
// seeded random interleaving, with a jittered pause between pushes.
type feeder struct {
	mu   sync.Mutex
	msgs []pushed
	done chan struct{}
}

// startFeeder starts pushing chats×perChat messages; stop ends it early.
func startFeeder(tg *faketelegram.Server, seed int64, chats, perChat int, minGap, maxGap time.Duration) (f *feeder, stop func()) {
	rng := rand.New(rand.NewSource(seed))
	left := make([]int, chats) // messages still to push, per chat
	for i := range left {
		left[i] = perChat
	}
	var order []int // chat index of each push
	for range chats * perChat {
		var open []int
		for c, n := range left {
			if n > 0 {
				open = append(open, c)
			}
		}
		c := open[rng.Intn(len(open))]
		left[c]--
		order = append(order, c)
	}
	gaps := make([]time.Duration, len(order))
	for i := range gaps {
		gaps[i] = minGap + time.Duration(rng.Int63n(int64(maxGap-minGap)+1))
	}
	f = &feeder{done: make(chan struct{})}
	quit := make(chan struct{})
	go func() {
		defer close(f.done)
		next := make([]int, chats)
		for i, c := range order {
			select {
			case <-quit:
				return
			case <-time.After(gaps[i]):
			}
			next[c]++
			p := pushed{chat: c + 1, n: next[c], text: fmt.Sprintf("c%d-m%d", c+1, next[c])}
			u := tg.PrivateText(int64(p.chat), "u"+strconv.Itoa(p.chat), p.text)
			p.msgID, _ = u["message"].(map[string]any)["message_id"].(int64)
			f.mu.Lock() // recorded before the push, so every update the bot can see is known
			f.msgs = append(f.msgs, p)
			i := len(f.msgs) - 1
			f.mu.Unlock()
			id := tg.Push(u)
			f.mu.Lock()
			f.msgs[i].updateID = id
			f.mu.Unlock()
		}
	}()
	return f, sync.OnceFunc(func() { close(quit); <-f.done })
}

func (f *feeder) pushed() []pushed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

// waitSends waits until the fake recorded at least target sends; it gives up
// (false) when no new send arrived for stall, or at the deadline.
func waitSends(tg *faketelegram.Server, target int, stall time.Duration, deadline time.Time) bool {
	for {
		n := len(tg.Sent())
		if n >= target {
			return true
		}
		wait := min(stall, time.Until(deadline))
		if wait <= 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err := tg.WaitSent(ctx, n+1)
		cancel()
		if err != nil {
			return false
		}
	}
}

// tally is the check of the fake's records against what was pushed.
type tally struct {
	messages, answered, duplicated, lost, failedLogged int
	// inDoubt counts messages left unanswered by the never-answer-twice
	// rule: a send intent was recorded, ship died before the reply left,
	// and recovery said so in its log rather than run them again.
	inDoubt                                                      int
	misrouted, other                                             int
	dupes, losses, failed, doubted, orderErrs, others, misroutes []string
}

// check counts, for every pushed message, the sends to its chat whose text
// is "echo: <text>", and checks per-chat order by first answers. logs name
// the (chat, message_id) pairs recovery marked failed or left in doubt.
func check(msgs []pushed, sent []faketelegram.Sent, logs logSummary) tally {
	var t tally
	t.messages = len(msgs)
	byText := map[string]pushed{}
	for _, p := range msgs {
		byText["echo: "+p.text] = p
	}
	count := map[string]int{}
	lastN := map[int]int{} // chat → highest n answered so far
	for _, s := range sent {
		p, ok := byText[s.Text]
		switch {
		case !ok:
			t.other++
			t.others = append(t.others, fmt.Sprintf("chat %d: %q", s.ChatID, s.Text))
			continue
		case s.ChatID != int64(p.chat):
			t.misrouted++
			t.misroutes = append(t.misroutes, fmt.Sprintf("%q sent to chat %d", s.Text, s.ChatID))
			continue
		}
		count[p.text]++
		if count[p.text] > 1 {
			continue // a duplicate; order is judged by first answers
		}
		if p.n < lastN[p.chat] {
			t.orderErrs = append(t.orderErrs, fmt.Sprintf("chat %d: m%d answered after m%d", p.chat, p.n, lastN[p.chat]))
		}
		lastN[p.chat] = max(lastN[p.chat], p.n)
	}
	for _, p := range msgs {
		switch n := count[p.text]; {
		case n == 1:
			t.answered++
		case n > 1:
			t.answered++
			t.duplicated++
			t.dupes = append(t.dupes, fmt.Sprintf("%s ×%d", p.text, n))
		case logs.failed[[2]int64{int64(p.chat), p.msgID}]:
			t.failedLogged++
			t.failed = append(t.failed, p.text)
		case logs.inDoubt[[2]int64{int64(p.chat), p.msgID}]:
			t.inDoubt++
			t.doubted = append(t.doubted, p.text)
		default:
			t.lost++
			t.losses = append(t.losses, p.text)
		}
	}
	return t
}

// shipRuns starts ship in dir with env again and again (the crash and
// drain tests kill or stop it in between) and keeps every run, for their
// logs.
type shipRuns struct {
	t     *testing.T
	tg    *faketelegram.Server
	dir   string
	env   []string
	procs []*shipProc
}

// start starts the next run and waits until it long-polls the fake.
func (r *shipRuns) start() *shipProc {
	r.t.Helper()
	polls := r.tg.Calls("getUpdates")
	p := startShip(r.t, r.dir, r.env)
	r.procs = append(r.procs, p)
	eventually(r.t, "a getUpdates from the new process", func() bool { return r.tg.Calls("getUpdates") > polls })
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := r.tg.WaitPolling(ctx); err != nil {
		r.t.Fatalf("ship (run %d) never long-polled: %v", len(r.procs), err)
	}
	return p
}

// stderrs are the runs' logs, in the order they started.
func (r *shipRuns) stderrs() []string {
	out := make([]string, len(r.procs))
	for i, p := range r.procs {
		out[i] = p.stderr.String()
	}
	return out
}

// logSummary reads the JSON log lines of ship's runs: the (chat,
// message_id) of every "marked failed" and "a reply may have gone out"
// line, and how often each warning or error message appeared.
type logSummary struct {
	failed       map[[2]int64]bool
	inDoubt      map[[2]int64]bool
	failedLines  []string
	unattributed int
	counts       map[string]int // "level: message" → lines
}

func readLogs(stderrs []string, msgs []pushed) logSummary {
	s := logSummary{failed: map[[2]int64]bool{}, inDoubt: map[[2]int64]bool{}, counts: map[string]int{}}
	byText := map[string]pushed{}
	for _, p := range msgs {
		byText[p.text] = p
	}
	for _, out := range stderrs {
		for line := range strings.Lines(out) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			level, _ := rec["level"].(string)
			msg, _ := rec["message"].(string)
			if level == "warn" || level == "error" || level == "fatal" || level == "panic" {
				s.counts[level+": "+msg]++
			}
			if strings.Contains(msg, "a reply may have gone out") {
				if key, ok := failedKey(rec, byText); ok {
					s.inDoubt[key] = true
				}
				continue
			}
			if !strings.Contains(strings.ToLower(line), "marked failed") {
				continue
			}
			s.failedLines = append(s.failedLines, strings.TrimSpace(line))
			if key, ok := failedKey(rec, byText); ok {
				s.failed[key] = true
			} else {
				s.unattributed++
			}
		}
	}
	return s
}

// failedKey finds the (chat, message_id) a "marked failed" line is about:
// from chatKey/chatId and messageId, or from the message's text.
func failedKey(rec map[string]any, byText map[string]pushed) ([2]int64, bool) {
	str := func(k string) string {
		switch v := rec[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatInt(int64(v), 10)
		}
		return ""
	}
	chatID := str("chatId")
	if chatID == "" {
		chatID = strings.TrimPrefix(str("chatKey"), "telegram:chat:")
	}
	c, err1 := strconv.ParseInt(chatID, 10, 64)
	m, err2 := strconv.ParseInt(str("messageId"), 10, 64)
	if err1 == nil && err2 == nil {
		return [2]int64{c, m}, true
	}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if v, ok := rec[k].(string); ok {
			if p, ok := byText[strings.TrimPrefix(v, "echo: ")]; ok {
				return [2]int64{int64(p.chat), p.msgID}, true
			}
		}
	}
	return [2]int64{}, false
}

// sortedCounts renders counts, most frequent first.
func sortedCounts(counts map[string]int) []string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%5d × %s", counts[k], k)
	}
	return out
}

// firstN is at most n items of xs, with a note of how many were left out.
func firstN(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … (%d more)", len(xs)-n)
}
