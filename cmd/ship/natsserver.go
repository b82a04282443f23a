//go:build cluster

package main

import (
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/cluster"
	"github.com/shipmyagent/ship/runtime/cluster/natsserver"
)

// embeddedNATS starts cluster.nats.embedded's server.
func embeddedNATS() cluster.StartServerFunc {
	return func(name, token string, e cluster.Embedded, log zerolog.Logger) (cluster.Server, error) {
		s, err := natsserver.Start(name, token, natsserver.Config(e), log)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
