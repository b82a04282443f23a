package cluster

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestAnEmbeddedServerThatCannotListenIsAnError(t *testing.T) {
	_, err := Start(context.Background(), Options{Replica: "a", Logger: zerolog.Nop(),
		Embedded: &Embedded{Listen: "127.0.0.1:notaport", StoreDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "cluster.nats.embedded.listen") {
		t.Fatalf("Start = %v, want an error naming cluster.nats.embedded.listen", err)
	}
}
