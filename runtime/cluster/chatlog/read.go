package chatlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/chat"
)

// catchUpGets is how many messages a tail fetches one by one before it
// streams the rest with an ordered consumer. On an embedded server a get
// costs about 60-100 µs and a consumer about 430 µs plus 5 µs a message
// (BenchmarkCatchUp), so they break even near 6; in a cluster creating a
// consumer also goes through the meta leader, which favours gets.
const catchUpGets = 8

// Recent returns the chat's newest n entries, oldest first. Served from the
// chat's tail once it is up to date, which costs one request to the stream
// leader when nothing is new; n beyond the tail reads the whole chat.
func (s *Store) Recent(ctx context.Context, chatKey string, n int) ([]chat.ChatLogEntryV1, error) {
	subject, err := s.readable(ctx, chatKey)
	if err != nil {
		return nil, fmt.Errorf("read recent chat entries: %w", err)
	}
	if n <= 0 {
		return []chat.ChatLogEntryV1{}, nil
	}
	t := s.cache.get(subject)
	t.mu.Lock()
	err = s.refresh(ctx, t, subject)
	var out []chat.ChatLogEntryV1
	ok := false
	if err == nil {
		out, ok = t.newest(n)
	}
	t.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("read recent chat entries: %w", err)
	}
	if ok {
		return out, nil
	}
	ring := newRing[chat.ChatLogEntryV1](n)
	if err := s.readAll(ctx, subject, 1, func(_ uint64, data []byte) bool {
		if e, ok := chat.DecodeEntry(data); ok {
			ring.push(e)
		}
		return true
	}); err != nil {
		return nil, fmt.Errorf("read recent chat entries: %w", err)
	}
	return ring.items(), nil
}

// Search returns up to limit entries whose text contains keyword, ignoring
// case with the file store's chat.Matcher, newest first.
func (s *Store) Search(ctx context.Context, chatKey, keyword string, limit int) ([]chat.ChatLogEntryV1, error) {
	subject, err := s.readable(ctx, chatKey)
	if err != nil {
		return nil, fmt.Errorf("search chat: %w", err)
	}
	if keyword == "" {
		return nil, fmt.Errorf("search chat: %w", chat.ErrEmptyKeyword)
	}
	out := []chat.ChatLogEntryV1{}
	if limit <= 0 {
		return out, nil
	}
	m := chat.NewMatcher(keyword)
	if all, ok, err := s.whole(ctx, subject); err != nil {
		return nil, fmt.Errorf("search chat: %w", err)
	} else if ok {
		for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
			if m.Matches(all[i].Text) {
				out = append(out, all[i])
			}
		}
		return out, nil
	}
	// The stream reads forward only: keep the newest limit matches.
	ring := newRing[chat.ChatLogEntryV1](limit)
	err = s.readAll(ctx, subject, 1, func(_ uint64, data []byte) bool {
		if !m.MatchesLine(data) {
			return true
		}
		if e, ok := chat.DecodeEntry(data); ok {
			ring.push(e)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("search chat: %w", err)
	}
	out = ring.items()
	slices.Reverse(out)
	return out, nil
}

// Scan calls fn with every entry of the chat, oldest first, until fn returns
// false. Entries appended while Scan runs may or may not be seen.
func (s *Store) Scan(ctx context.Context, chatKey string, fn func(chat.ChatLogEntryV1) bool) error {
	subject, err := s.readable(ctx, chatKey)
	if err != nil {
		return fmt.Errorf("scan chat: %w", err)
	}
	all, ok, err := s.whole(ctx, subject)
	if err != nil {
		return fmt.Errorf("scan chat: %w", err)
	}
	if ok {
		for _, e := range all {
			if !fn(e) {
				return nil
			}
		}
		return nil
	}
	err = s.readAllPatiently(ctx, subject, 1, func(_ uint64, data []byte) bool {
		if e, ok := chat.DecodeEntry(data); ok {
			return fn(e)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("scan chat: %w", err)
	}
	return nil
}

// Stats summarises the chat: messages, their size in the JSONL layout (one
// line each) and the ts of the newest entry. The tail keeps these totals,
// so once it is up to date they cost nothing more.
func (s *Store) Stats(ctx context.Context, chatKey string) (chat.ChatStats, error) {
	subject, err := s.readable(ctx, chatKey)
	if err != nil {
		return chat.ChatStats{}, fmt.Errorf("chat stats: %w", err)
	}
	t := s.cache.get(subject)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := s.refresh(ctx, t, subject); err != nil {
		return chat.ChatStats{}, fmt.Errorf("chat stats: %w", err)
	}
	return chat.ChatStats{Entries: t.msgs, LastTS: t.lastTS, Bytes: t.bytes}, nil
}

// ChatKeys lists every chat on the stream, sorted. The stream's per-subject
// state comes in pages; the jetstream client follows them all.
func (s *Store) ChatKeys(ctx context.Context) ([]string, error) {
	if err := s.checkOpen(ctx); err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(SubjectPrefix+">"))
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		key, err := chat.UnescapeChatKey(strings.TrimPrefix(subject, SubjectPrefix))
		if err != nil {
			// Published by something other than ship; not a chat.
			s.log.Debug().Str("subject", subject).Msg("skipping a subject that names no chat")
			continue
		}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys, nil
}

// readable checks that the store is open and returns chatKey's subject.
func (s *Store) readable(ctx context.Context, chatKey string) (string, error) {
	if err := s.checkOpen(ctx); err != nil {
		return "", err
	}
	return Subject(chatKey)
}

// whole returns every entry of the chat when its up-to-date tail holds all
// of them.
func (s *Store) whole(ctx context.Context, subject string) ([]chat.ChatLogEntryV1, bool, error) {
	t := s.cache.get(subject)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := s.refresh(ctx, t, subject); err != nil {
		return nil, false, err
	}
	all, ok := t.all()
	return all, ok, nil
}

// refresh brings t up to date with the stream; the caller holds t.mu.
//
// The stream is append-only, so only messages of the subject past
// t.lastSeq can be new (all of them for a tail never read). refresh asks
// the stream leader for them one at a time and, past catchUpGets, streams
// the rest with an ordered consumer; the last answer, "nothing newer", always
// comes from the leader. The leader has stored every message it
// acknowledged, so an append that any Store saw acknowledged is in the tail
// afterwards. A direct get could be answered by a follower that has not
// applied it yet, and an ordered consumer may run on one: hence the leader.
// On an error the tail keeps what it read, which is consistent.
func (s *Store) refresh(ctx context.Context, t *tail, subject string) error {
	for gets := 0; ; gets++ {
		if gets == catchUpGets {
			start, from := time.Now(), t.msgs
			if _, _, err := s.scan(ctx, subject, t.lastSeq+1, func(seq uint64, data []byte) bool {
				t.add(seq, data)
				return true
			}); err != nil {
				return err
			}
			s.log.Debug().Str("subject", subject).Int("read", t.msgs-from).Dur("took", time.Since(start)).Msg("chat tail caught up")
		}
		seq, data, err := s.nextBySubject(ctx, subject, t.lastSeq+1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		t.add(seq, data)
	}
}

// msgGetResponse is the JetStream API's answer to STREAM.MSG.GET.
type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
	Message *struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Data    []byte `json:"data"` // base64 in the JSON
	} `json:"message,omitempty"`
}

// nextBySubject returns the first message of subject at or after stream
// sequence seq, asking the stream leader (the jetstream client would send
// a direct get, which any replica answers, as the stream allows them);
// jetstream.ErrMsgNotFound when there is none.
func (s *Store) nextBySubject(ctx context.Context, subject string, seq uint64) (uint64, []byte, error) {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq"`
		NextFor string `json:"next_by_subj"`
	}{seq, subject})
	if err != nil {
		return 0, nil, err
	}
	msg, err := s.request(ctx, req)
	if err != nil {
		return 0, nil, fmt.Errorf("get message from stream %s: %w", StreamName, err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, nil, fmt.Errorf("get message from stream %s: %w", StreamName, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return 0, nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return 0, nil, fmt.Errorf("get message from stream %s: %s (%d)", StreamName, resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil || resp.Message.Subject != subject || resp.Message.Seq < seq:
		return 0, nil, fmt.Errorf("get message from stream %s: unexpected answer", StreamName)
	}
	return resp.Message.Seq, resp.Message.Data, nil
}

// request sends a message-get to the stream leader, asking again (retry)
// when no answer comes.
func (s *Store) request(ctx context.Context, req []byte) (*nats.Msg, error) {
	var msg *nats.Msg
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		msg, err = s.nc.RequestWithContext(ctx, s.getSubj, req)
		return err
	})
	return msg, err
}

// readAll feeds fn every message of subject from stream sequence start on,
// in order, until fn returns false: the bulk through an ordered consumer,
// the last word from the stream leader (see refresh), so that every
// message acknowledged before the call is seen. One attempt: Recent and
// Search are on a platform's intake path, which would rather fail (the
// platform delivers again) than wait out a leader election.
func (s *Store) readAll(ctx context.Context, subject string, start uint64, fn func(seq uint64, data []byte) bool) error {
	_, err := s.readFrom(ctx, subject, start, fn)
	return err
}

// readFrom is one attempt of readAll; next is the sequence after the last
// message fed (start when none was).
func (s *Store) readFrom(ctx context.Context, subject string, start uint64, fn func(seq uint64, data []byte) bool) (next uint64, err error) {
	next = start
	stopped := false
	feed := func(seq uint64, data []byte) bool {
		next = seq + 1
		stopped = !fn(seq, data)
		return !stopped
	}
	_, more, err := s.scan(ctx, subject, start, feed)
	if err != nil || !more || stopped {
		return next, err
	}
	for {
		seq, data, err := s.nextBySubject(ctx, subject, next)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return next, nil
		}
		if err != nil {
			return next, err
		}
		if !feed(seq, data) {
			return next, nil
		}
	}
}

// readAllPatiently is readAll for a whole chat's history (Scan: history
// tools, export): a read cut short (a leader election, a machine so busy
// that a consumer is not made in time) goes on from the first entry not
// fed yet, for as long as it keeps getting somewhere within hotBudget.
func (s *Store) readAllPatiently(ctx context.Context, subject string, start uint64, fn func(seq uint64, data []byte) bool) error {
	next, stopped := start, false
	feed := func(seq uint64, data []byte) bool {
		stopped = !fn(seq, data)
		return !stopped
	}
	deadline := time.Now().Add(hotBudget)
	wait := 100 * time.Millisecond
	for {
		from := next
		var err error
		next, err = s.readFrom(ctx, subject, next, feed)
		if err == nil || stopped || errors.Is(err, nats.ErrConnectionClosed) || ctx.Err() != nil {
			return err
		}
		if next > from {
			deadline = time.Now().Add(hotBudget)
		}
		if time.Now().After(deadline) {
			return err
		}
		s.log.Debug().Err(err).Msg("reading a chat; trying again")
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// scan feeds fn the messages of subject from stream sequence start on, in
// order, through an ordered consumer, until fn returns false (more is then
// false) or none is pending; last is the sequence of the last one fed (0
// for none).
func (s *Store) scan(ctx context.Context, subject string, start uint64, fn func(seq uint64, data []byte) bool) (last uint64, more bool, err error) {
	cctx, cancel := s.bounded(ctx)
	cons, err := s.stream.OrderedConsumer(cctx, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{subject},
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		InactiveThreshold: 30 * time.Second, // a backstop: deleted below
	})
	cancel()
	if err != nil {
		return 0, false, fmt.Errorf("read stream %s: %w", StreamName, err)
	}
	defer s.deleteConsumer(cons)
	if cons.CachedInfo().NumPending == 0 {
		return 0, true, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return 0, false, fmt.Errorf("read stream %s: %w", StreamName, err)
	}
	defer it.Stop()
	for {
		nctx, cancel := s.bounded(ctx)
		msg, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if err != nil {
			return last, false, fmt.Errorf("read stream %s: %w", StreamName, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return last, false, fmt.Errorf("read stream %s: %w", StreamName, err)
		}
		last = md.Sequence.Stream
		if !fn(last, msg.Data()) {
			return last, false, nil
		}
		if md.NumPending == 0 {
			return last, true, nil
		}
	}
}

// deleteConsumer removes a scan's consumer at once rather than leaving it to
// its inactivity threshold.
func (s *Store) deleteConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.js.DeleteConsumer(ctx, StreamName, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.log.Warn().Err(err).Str("consumer", info.Name).Msg("could not delete a chat scan's consumer; it expires by itself")
	}
}

// bounded caps one JetStream request at the default timeout, whatever the
// caller's deadline: a reply can be lost (the stream has no leader, or the
// client dropped it as a slow consumer under load), and a worker holding a
// run's long deadline must not wait that long for it.
func (s *Store) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// ring keeps the last n items pushed (n > 0).
type ring[T any] struct {
	n    int
	buf  []T
	next int // where the next push goes once buf is full
}

func newRing[T any](n int) *ring[T] { return &ring[T]{n: n} }

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.n {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % r.n
}

// items returns the items oldest first.
func (r *ring[T]) items() []T {
	out := make([]T, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}
