package chatlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

// startServer runs a single-node NATS server with JetStream on storeDir,
// shut down with the test (or earlier by the test itself).
func startServer(tb testing.TB, storeDir string) *server.Server {
	tb.Helper()
	s, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  storeDir,
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("nats server not ready within 10s")
	}
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// connect opens a client connection of its own to s (as another replica
// would), closed with the test.
func connect(tb testing.TB, s *server.Server, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
	tb.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return js
}

// open opens a Store on js, closed with the test.
func open(tb testing.TB, js jetstream.JetStream, opts chatlog.Options) *chatlog.Store {
	tb.Helper()
	st, err := chatlog.Open(context.Background(), js, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// newStore is a Store on a fresh server.
func newStore(tb testing.TB, opts chatlog.Options) (*chatlog.Store, *server.Server) {
	tb.Helper()
	s := startServer(tb, tb.TempDir())
	return open(tb, connect(tb, s), opts), s
}

// openFileStore opens a file store in a fresh folder, closed with the test.
func openFileStore(tb testing.TB) *chat.Store {
	tb.Helper()
	fs, err := chat.OpenStore(chat.StoreOptions{Dir: tb.TempDir(), Durability: chat.DurabilityNone})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = fs.Close() })
	return fs
}

// entry is a user entry of chatKey with text.
func entry(chatKey, text string) chat.ChatLogEntryV1 {
	return chat.ChatLogEntryV1{Channel: chat.ChannelAPI, ChatID: chatKey, ChatKey: chatKey, UserID: "u1", Role: chat.RoleUser, Text: text}
}

// appendN appends n entries "<prefix> i" to chatKey and returns them as written.
func appendN(tb testing.TB, log chat.Log, chatKey, prefix string, n int) []chat.ChatLogEntryV1 {
	tb.Helper()
	out := make([]chat.ChatLogEntryV1, 0, n)
	for i := range n {
		e, err := log.Append(context.Background(), entry(chatKey, fmt.Sprintf("%s %d", prefix, i)))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// streamMsgs is how many messages the chat stream holds.
func streamMsgs(tb testing.TB, js jetstream.JetStream) uint64 {
	tb.Helper()
	st, err := js.Stream(context.Background(), chatlog.StreamName)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.Msgs
}
