package adapters

import "github.com/shipmyagent/ship/runtime/metrics"

// Meter counts a platform's API calls for ship's metrics (the binary
// passes runtime/metrics' Set; a platform never sees more of it). The
// labels it is given must come from bounded sets: the platform's name, a
// method name the adapter's own code chooses, and a code.
type Meter interface {
	// PlatformCall counts one call (every attempt of a retried one):
	// code is "ok", the HTTP status or the platform's error code ("429"
	// for a rate limit), or "network" when no answer came.
	PlatformCall(platform, method, code string)
}

// Metered is an adapter that counts its API calls: the binary gives it a
// Meter before Run.
type Metered interface {
	MeterWith(m Meter)
}

// Codes of a call that got no platform code. CodeOK is the metrics' own,
// which they count as no error.
const (
	CodeOK      = metrics.CodeOK
	CodeNetwork = "network"
)
