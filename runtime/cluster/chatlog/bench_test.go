package chatlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

// The benchmarks run on one embedded server with JetStream on a temp dir
// (R1), client and server in one process over loopback TCP: a floor for a
// production cluster, where a write also waits for a quorum of replicas.

// benchEntry is a turn-sized entry (about 300 bytes of JSON).
func benchEntry(key string, i int) chat.ChatLogEntryV1 {
	e := entry(key, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 16)))
	e.MessageID = fmt.Sprint(i)
	return e
}

// BenchmarkAppend: one Append, acknowledged (stored) by JetStream, over 64 chats.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	st, _ := newStore(b, chatlog.Options{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := st.Append(ctx, benchEntry(fmt.Sprintf("api:chat:%d", i%64), i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAppendParallel: Appends from GOMAXPROCS goroutines at once
// (the runs of several chats), each waiting for its acknowledgement.
func BenchmarkAppendParallel(b *testing.B) {
	ctx := context.Background()
	st, _ := newStore(b, chatlog.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := st.Append(ctx, benchEntry(fmt.Sprintf("api:chat:%d", i%64), i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkRecent: Recent(n) of a 1,000-entry chat whose tail is warm; each
// call still asks the stream leader whether anything is new. "one-new" has
// another Store append to the chat before every read.
func BenchmarkRecent(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{20, 200} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			st, _ := newStore(b, chatlog.Options{})
			fill(b, st, "api:chat:bench", 1000)
			if _, err := st.Recent(ctx, "api:chat:bench", n); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				got, err := st.Recent(ctx, "api:chat:bench", n)
				if err != nil || len(got) != n {
					b.Fatal(len(got), err)
				}
			}
		})
	}
	b.Run("n=20/one-new", func(b *testing.B) {
		st, s := newStore(b, chatlog.Options{})
		other := open(b, connect(b, s), chatlog.Options{})
		fill(b, st, "api:chat:bench", 1000)
		if _, err := st.Recent(ctx, "api:chat:bench", 20); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			b.StopTimer()
			if _, err := other.Append(ctx, benchEntry("api:chat:bench", i)); err != nil {
				b.Fatal(err)
			}
			i++
			b.StartTimer()
			if _, err := st.Recent(ctx, "api:chat:bench", 20); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecentCold: the first Recent(20) of a Store for a chat of 1,000
// entries: the whole chat is read (then kept up to date incrementally).
func BenchmarkRecentCold(b *testing.B) {
	ctx := context.Background()
	st, s := newStore(b, chatlog.Options{})
	fill(b, st, "api:chat:bench", 1000)
	js := connect(b, s)
	b.ReportAllocs()
	for b.Loop() {
		cold, err := chatlog.Open(ctx, js, chatlog.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if got, err := cold.Recent(ctx, "api:chat:bench", 20); err != nil || len(got) != 20 {
			b.Fatal(len(got), err)
		}
		_ = cold.Close()
	}
}

// BenchmarkCatchUp compares ways of reading the messages of one chat past
// a known stream sequence (what a warm tail needs): k new messages, then
// the answer that nothing more is there. leaderGet is STREAM.MSG.GET with
// next_by_subj (what the Store uses), directGet the same as a direct get,
// orderedConsumer a consumer from the start sequence.
func BenchmarkCatchUp(b *testing.B) {
	ctx := context.Background()
	const key = "api:chat:bench"
	subject, _ := chatlog.Subject(key)
	for _, k := range []int{0, 1, 10} {
		s := startServer(b, b.TempDir())
		js := connect(b, s)
		st := open(b, js, chatlog.Options{})
		fill(b, st, key, 1000+k)
		fill(b, st, "api:chat:noise", 1000)
		stream, err := js.Stream(ctx, chatlog.StreamName)
		if err != nil {
			b.Fatal(err)
		}
		const first uint64 = 1001 // the chat's messages are sequences 1 to 1000+k, the noise after
		b.Run(fmt.Sprintf("new=%d/leaderGet", k), func(b *testing.B) {
			for b.Loop() {
				if n := leaderCatchUp(b, js, subject, first); n != k {
					b.Fatalf("read %d, want %d", n, k)
				}
			}
		})
		b.Run(fmt.Sprintf("new=%d/directGet", k), func(b *testing.B) {
			for b.Loop() {
				n := 0
				for seq := first; ; n++ {
					m, err := stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
					if errors.Is(err, jetstream.ErrMsgNotFound) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					seq = m.Sequence + 1
				}
				if n != k {
					b.Fatalf("read %d, want %d", n, k)
				}
			}
		})
		b.Run(fmt.Sprintf("new=%d/orderedConsumer", k), func(b *testing.B) {
			for b.Loop() {
				if n := consumerCatchUp(b, js, stream, subject, first); n != k {
					b.Fatalf("read %d, want %d", n, k)
				}
			}
		})
	}
}

// fill appends n entries to key, deferred in batches.
func fill(tb testing.TB, st *chatlog.Store, key string, n int) {
	tb.Helper()
	ctx := context.Background()
	var pending []*chat.Pending
	for i := range n {
		_, p, err := st.AppendDeferred(ctx, benchEntry(key, i))
		if err != nil {
			tb.Fatal(err)
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		if err := p.Wait(); err != nil {
			tb.Fatal(err)
		}
	}
}

func leaderCatchUp(tb testing.TB, js jetstream.JetStream, subject string, seq uint64) int {
	tb.Helper()
	for n := 0; ; n++ {
		req, _ := json.Marshal(map[string]any{"seq": seq, "next_by_subj": subject})
		msg, err := js.Conn().Request("$JS.API.STREAM.MSG.GET."+chatlog.StreamName, req, 5*time.Second)
		if err != nil {
			tb.Fatal(err)
		}
		var resp struct {
			Error   *struct{ Code int }
			Message *struct{ Seq uint64 }
		}
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			tb.Fatal(err)
		}
		if resp.Error != nil {
			return n
		}
		seq = resp.Message.Seq + 1
	}
}

func consumerCatchUp(tb testing.TB, js jetstream.JetStream, stream jetstream.Stream, subject string, seq uint64) int {
	tb.Helper()
	ctx := context.Background()
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq,
	})
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = js.DeleteConsumer(ctx, chatlog.StreamName, cons.CachedInfo().Name) }()
	pending := cons.CachedInfo().NumPending
	if pending == 0 {
		return 0
	}
	it, err := cons.Messages()
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Stop()
	for n := 1; ; n++ {
		msg, err := it.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if md, _ := msg.Metadata(); md.NumPending == 0 {
			return n
		}
	}
}
