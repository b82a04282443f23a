package chatlog_test

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

// startCluster runs n NATS servers with JetStream routed into one cluster.
func startCluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	servers := make([]*server.Server, n)
	for i := range n {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: "ship", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:   true, NoSigs: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		servers[i] = s
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("nats server not ready within 10s")
		}
	}
	return servers
}

// openWhenReady opens a Store once the cluster has elected its JetStream
// meta leader and can place an R3 stream (a condition, polled).
func openWhenReady(t testing.TB, js jetstream.JetStream, opts chatlog.Options) *chatlog.Store {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 250*time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := chatlog.Open(ctx, js, opts)
		cancel()
		if err == nil {
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("hang guard: no R%d chat stream after 30s: %v", opts.Replicas, err)
		}
		time.Sleep(delay)
	}
}

// Three routed servers, an R3 stream, and a Store on each server (as three
// replicas of ship would have): an append acknowledged through one server
// is in the next read through any other, including followers of the
// stream, whose copy may lag behind the leader's.
func TestClusterR3StoresSeeEachOthersAppends(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster")
	}
	ctx := context.Background()
	servers := startCluster(t, 3)
	js0 := connect(t, servers[0])
	stores := []*chatlog.Store{openWhenReady(t, js0, chatlog.Options{Replicas: 3, CacheEntries: 8})}
	for _, s := range servers[1:] {
		stores = append(stores, open(t, connect(t, s), chatlog.Options{Replicas: 3, CacheEntries: 8}))
	}
	stream, err := js0.Stream(ctx, chatlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream is not R3 across the cluster: %+v, %+v", info.Config, info.Cluster)
	}
	const key = "telegram:chat:-100123:topic:7"
	var want []chat.ChatLogEntryV1
	for i := range 60 {
		writer := stores[i%3]
		e, err := writer.Append(ctx, entry(key, fmt.Sprintf("turn %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
		for r, reader := range stores {
			got, err := reader.Recent(ctx, key, 8)
			if err != nil {
				t.Fatal(err)
			}
			if last := want[max(0, len(want)-8):]; !reflect.DeepEqual(got, last) {
				t.Fatalf("append %d through server %d: Recent(8) through server %d = %v, want %v", i, i%3, r, texts(got), texts(last))
			}
		}
	}
	for r, st := range stores {
		if all := scanAll(t, st, key); !reflect.DeepEqual(all, want) {
			t.Fatalf("Scan through server %d: %d entries, want %d", r, len(all), len(want))
		}
	}
}

// BenchmarkClusterR3: Append and a warm Recent(20) through a follower's
// server of an R3 stream on three routed servers in this process (loopback
// routes): an Append waits for a quorum, a Recent asks the leader.
func BenchmarkClusterR3(b *testing.B) {
	ctx := context.Background()
	servers := startCluster(b, 3)
	openWhenReady(b, connect(b, servers[0]), chatlog.Options{Replicas: 3})
	// Whichever server this is, the Store works the same; most of the time
	// it is not the stream leader (2 in 3).
	st := open(b, connect(b, servers[1]), chatlog.Options{Replicas: 3})
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := st.Append(ctx, benchEntry(fmt.Sprintf("api:chat:%d", i%64), i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Recent/n=20", func(b *testing.B) {
		fill(b, st, "api:chat:bench", 1000)
		if _, err := st.Recent(ctx, "api:chat:bench", 20); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, err := st.Recent(ctx, "api:chat:bench", 20); err != nil || len(got) != 20 {
				b.Fatal(len(got), err)
			}
		}
	})
}
