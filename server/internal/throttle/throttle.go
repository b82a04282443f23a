// Package throttle holds back a client address that keeps presenting wrong
// credentials: the API's bearer tokens and the console's login share one
// Limiter, so a guesser gets one allowance however it asks.
package throttle

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// Defaults for Options left at zero.
const (
	DefaultFailures     = 10
	DefaultWindow       = time.Minute
	DefaultMaxAddresses = 10_000
)

// Options configure a Limiter.
type Options struct {
	// Failures is how many wrong credentials an address may present in
	// Window before it is held back; 0 → 10.
	Failures int
	// Window is the sliding window failures are counted in; 0 → 1 min.
	Window time.Duration
	// MaxAddresses caps the addresses remembered, so a flood from many
	// addresses cannot grow memory without bound; 0 → 10,000.
	MaxAddresses int
	// Now is the clock; nil → time.Now.
	Now func() time.Time
}

// Limiter counts failures per address. It is safe for concurrent use.
type Limiter struct {
	opts Options

	mu sync.Mutex
	// fails holds each address's failures within the window, oldest first,
	// at most Options.Failures of them.
	fails map[string][]time.Time
}

// New returns a Limiter.
func New(opts Options) *Limiter {
	if opts.Failures <= 0 {
		opts.Failures = DefaultFailures
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.MaxAddresses <= 0 {
		opts.MaxAddresses = DefaultMaxAddresses
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Limiter{opts: opts, fails: make(map[string][]time.Time)}
}

// Check is one attempt from addr (see Key) whose credential was right (ok)
// or wrong. While addr is held back it returns how long to wait, and the
// attempt is refused whatever ok says: a guesser must not learn that a
// guess was right. Otherwise a wrong credential is counted and wait is 0;
// held is true when this failure was the one that used the allowance up.
//
// Checking and counting happen under one lock, so guesses sent in parallel
// cannot all slip past the limit; a right credential is never counted, so a
// busy client with a good token is never held back by its own traffic.
// Nor does it clear the count: a holder of one token must not be able to
// guess another by mixing in good requests.
func (l *Limiter) Check(addr string, ok bool) (wait time.Duration, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.opts.Now()
	fails := l.recent(addr, now)
	if len(fails) >= l.opts.Failures {
		return l.waitFor(fails, now), false
	}
	if ok {
		return 0, false
	}
	if len(fails) == 0 {
		l.makeRoom(now)
	}
	fails = append(fails, now)
	l.fails[addr] = fails
	return 0, len(fails) >= l.opts.Failures
}

// Wait returns how long addr is held back; 0 when it is not.
func (l *Limiter) Wait(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.opts.Now()
	fails := l.recent(addr, now)
	if len(fails) < l.opts.Failures {
		return 0
	}
	return l.waitFor(fails, now)
}

// recent drops addr's failures that left the window and returns the rest.
func (l *Limiter) recent(addr string, now time.Time) []time.Time {
	fails, ok := l.fails[addr]
	if !ok {
		return nil
	}
	i := 0
	for i < len(fails) && !now.Before(fails[i].Add(l.opts.Window)) {
		i++
	}
	if i == len(fails) {
		delete(l.fails, addr)
		return nil
	}
	fails = fails[i:]
	l.fails[addr] = fails
	return fails
}

// waitFor is how long until the oldest of a full set of failures leaves
// the window, freeing one attempt.
func (l *Limiter) waitFor(fails []time.Time, now time.Time) time.Duration {
	return fails[len(fails)-l.opts.Failures].Add(l.opts.Window).Sub(now)
}

// makeRoom keeps the table under MaxAddresses before a new address is
// added: first addresses whose failures have all left the window go,
// then, if it is still full, the one whose last failure is oldest.
func (l *Limiter) makeRoom(now time.Time) {
	if len(l.fails) < l.opts.MaxAddresses {
		return
	}
	for addr := range l.fails {
		l.recent(addr, now)
	}
	if len(l.fails) < l.opts.MaxAddresses {
		return
	}
	var oldest string
	var at time.Time
	for addr, fails := range l.fails {
		if last := fails[len(fails)-1]; oldest == "" || last.Before(at) {
			oldest, at = addr, last
		}
	}
	delete(l.fails, oldest)
}

// Key is the address a request is counted under: the IP of remoteAddr
// ("host:port"), and for IPv6 its /64, which one subscriber usually holds
// whole. Behind a reverse proxy every client has the proxy's address.
func Key(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// RetryAfter is d in whole seconds, rounded up, for a Retry-After header
// and the message that goes with it.
func RetryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
