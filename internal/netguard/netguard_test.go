package netguard_test

import (
	"net/http/httptest"
	"testing"

	"github.com/shipmyagent/ship/internal/netguard"
)

func TestLoopbackNeedsALoopbackAddressAndHostName(t *testing.T) {
	for _, tc := range []struct {
		remote, host string
		want         bool
	}{
		{"127.0.0.1:5555", "127.0.0.1:3000", true},
		{"127.8.9.10:5555", "127.0.0.1", true}, // all of 127.0.0.0/8
		{"[::1]:5555", "localhost:3000", true},
		{"[::1]:5555", "LOCALHOST", true},
		{"127.0.0.1:5555", "[::1]:3000", true},
		{"127.0.0.1:5555", "evil.example:3000", false}, // a rebinding page's name
		{"127.0.0.1:5555", "localtest.me", false},      // resolves to 127.0.0.1, still not ours to trust
		{"127.0.0.1:5555", "localhost.evil.example", false},
		{"192.0.2.7:5555", "127.0.0.1:3000", false}, // another machine
		{"[::ffff:192.0.2.7]:5555", "localhost", false},
		{"127.0.0.1:5555", "", false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr, r.Host = tc.remote, tc.host
		if got := netguard.Loopback(r); got != tc.want {
			t.Errorf("from %q to %q: %v, want %v", tc.remote, tc.host, got, tc.want)
		}
	}
}

func TestOwnOriginComparesTheHostAndPort(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "127.0.0.1:3000"
	for origin, want := range map[string]bool{
		"http://127.0.0.1:3000":  true,
		"https://127.0.0.1:3000": true, // a TLS proxy in front: the scheme is not ours to see
		"http://127.0.0.1:3001":  false,
		"http://localhost:3000":  false,
		"http://127.0.0.1":       false,
		"null":                   false,
		"":                       false,
		"http://[::1]:3000":      false,
	} {
		if got := netguard.OwnOrigin(r, origin); got != want {
			t.Errorf("Origin %q to Host %q: %v, want %v", origin, r.Host, got, want)
		}
	}
}
