//go:build !embeddednats

package main

import "github.com/shipmyagent/ship/runtime/cluster"

// embeddedNATS is nil in the default binary, which does not link the
// embedded NATS server (see natsserver_on.go): cluster.nats.embedded then
// fails at start with cluster.ErrNoEmbeddedServer, and cluster.nats.url
// works as ever.
func embeddedNATS() cluster.StartServerFunc { return nil }
