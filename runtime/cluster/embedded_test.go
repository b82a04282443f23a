package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/cluster/natsserver"
)

// startServer runs the real embedded server, as a ship binary built with
// -tags cluster does.
func startServer(name, token string, e Embedded, log zerolog.Logger) (Server, error) {
	s, err := natsserver.Start(name, token, natsserver.Config(e), log)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func TestEmbeddedWithoutTheServerBuiltInFailsClearly(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{Replica: "a", Logger: zerolog.Nop(),
		Embedded: &Embedded{Listen: "127.0.0.1:-1", StoreDir: dir}})
	if !errors.Is(err, ErrNoEmbeddedServer) {
		t.Fatalf("Start = %v, want ErrNoEmbeddedServer", err)
	}
	for _, want := range []string{"-tags cluster", "cluster.nats.url"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the store folder got %d entries from a server that never ran", len(entries))
	}
}

func TestAnEmbeddedServerThatCannotListenIsAnError(t *testing.T) {
	_, err := Start(context.Background(), Options{Replica: "a", Logger: zerolog.Nop(), StartServer: startServer,
		Embedded: &Embedded{Listen: "127.0.0.1:notaport", StoreDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "cluster.nats.embedded.listen") {
		t.Fatalf("Start = %v, want an error naming cluster.nats.embedded.listen", err)
	}
}
