package config

import (
	"fmt"
	"net"
	"strconv"
)

// MetricsConfig is the "metrics" section of ship.json: Prometheus metrics
// at /metrics (runtime/metrics).
type MetricsConfig struct {
	// Off switches metrics off: no /metrics, nothing counted.
	Off bool `json:"off,omitempty"`
	// Listen, when set ("127.0.0.1:9464"), serves /metrics on a listener
	// of its own, without the API token, for a scraper that cannot send
	// one; the main listener then has no /metrics. "" (the default)
	// serves /metrics on the main listener behind the API token.
	Listen string `json:"listen,omitempty"`
}

// On reports whether metrics are kept.
func (m MetricsConfig) On() bool { return !m.Off }

// validate checks the section's values.
func (m MetricsConfig) validate() error {
	if m.Listen == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return fmt.Errorf("%w: metrics.listen %q must be host:port, e.g. \"127.0.0.1:9464\": %v", ErrInvalid, m.Listen, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%w: metrics.listen %q: the port must be a number from 0 to 65535", ErrInvalid, m.Listen)
	}
	return nil
}
