//go:build embeddednats

package main

import (
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/cluster"
	"github.com/shipmyagent/ship/runtime/cluster/natsserver"
)

// embeddedNATS starts cluster.nats.embedded's server. This file is built
// only with -tags embeddednats: linking nats-server costs every ship
// process about 2.8 MiB of idle RSS, so the default binary leaves it out
// (natsserver_off.go).
func embeddedNATS() cluster.StartServerFunc {
	return func(name, token string, e cluster.Embedded, log zerolog.Logger) (cluster.Server, error) {
		s, err := natsserver.Start(name, token, natsserver.Config(e), log)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
