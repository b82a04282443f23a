package ingress

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of UserLimiterOptions: generous enough that no person typing
// ever meets them, tight enough that one member of a group (or a script)
// cannot fill the global queue and starve everyone else.
const (
	DefaultUserRate    = rate.Limit(20.0 / 60) // 20 messages per minute
	DefaultUserBurst   = 10
	DefaultUserMaxKeys = 100_000
)

// UserLimiterOptions configure a UserLimiter.
type UserLimiterOptions struct {
	// Rate is the sustained messages per second one user may send in one
	// chat; 0 or less → DefaultUserRate; rate.Inf → no limit.
	Rate rate.Limit
	// Burst is how many messages may come at once; 0 or less →
	// DefaultUserBurst.
	Burst int
	// MaxKeys caps the (chat, user) pairs remembered; past it the least
	// recently seen pair is forgotten (its next message starts with a full
	// bucket). 0 or less → DefaultUserMaxKeys.
	MaxKeys int
	// Now is the clock; nil → time.Now. Tests inject one.
	Now func() time.Time
}

// UserLimiter is a token bucket per (chatKey, userID): each member of a
// group has their own allowance, so one member cannot starve the rest. It
// is safe for concurrent use.
//
// Memory is bounded: a pair idle long enough for its bucket to be full
// again is forgotten (forgetting it changes nothing), and at most MaxKeys
// pairs are kept (the least recently seen goes first).
type UserLimiter struct {
	limit   rate.Limit
	burst   int
	maxKeys int
	idle    time.Duration // time for an empty bucket to refill completely
	now     func() time.Time

	mu  sync.Mutex
	lru *list.List // of *userBucket, most recently seen first
	m   map[userKey]*list.Element
}

type userKey struct{ chatKey, userID string }

type userBucket struct {
	key  userKey
	lim  *rate.Limiter
	last time.Time // the last Allow for this pair
}

// NewUserLimiter returns a limiter with opts' settings (defaults for the
// zero values).
func NewUserLimiter(opts UserLimiterOptions) *UserLimiter {
	if opts.Rate <= 0 {
		opts.Rate = DefaultUserRate
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultUserBurst
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultUserMaxKeys
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &UserLimiter{
		limit:   opts.Rate,
		burst:   opts.Burst,
		maxKeys: opts.MaxKeys,
		now:     opts.Now,
		lru:     list.New(),
		m:       make(map[userKey]*list.Element),
	}
	if opts.Rate != rate.Inf {
		l.idle = refillTime(opts.Burst, opts.Rate)
	}
	return l
}

// refillTime is how long an empty bucket of burst tokens takes to fill at
// r, capped so that a tiny rate does not overflow time.Duration.
func refillTime(burst int, r rate.Limit) time.Duration {
	const most = time.Duration(1<<63 - 1)
	secs := float64(burst) / float64(r)
	if secs >= most.Seconds()/2 { // well clear of float rounding at the top
		return most
	}
	return time.Duration(secs * float64(time.Second))
}

// Allow reports whether userID may send one more message in chatKey now,
// and counts it when so. A refused message is not counted: a user who keeps
// trying gets through as soon as the bucket allows.
func (l *UserLimiter) Allow(chatKey, userID string) bool {
	ok, _ := l.Take(chatKey, userID)
	return ok
}

// Take is Allow that also says, for a refused message, how long until one
// would be taken: what a refused sender is told to wait.
func (l *UserLimiter) Take(chatKey, userID string) (bool, time.Duration) {
	if l.limit == rate.Inf {
		return true, 0
	}
	now := l.now()
	k := userKey{chatKey, userID}

	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked(now)
	var b *userBucket
	if el, ok := l.m[k]; ok {
		b = el.Value.(*userBucket)
		l.lru.MoveToFront(el)
	} else {
		b = &userBucket{key: k, lim: rate.NewLimiter(l.limit, l.burst)}
		l.m[k] = l.lru.PushFront(b)
		for l.lru.Len() > l.maxKeys {
			l.removeLocked(l.lru.Back())
		}
	}
	if now.After(b.last) {
		b.last = now
	}
	if b.lim.AllowN(now, 1) {
		return true, 0
	}
	r := b.lim.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now) // only asked: the refused message takes no token
	return false, wait
}

// Len is how many (chat, user) pairs are remembered.
func (l *UserLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// pruneLocked forgets the pairs idle for at least the time a bucket takes
// to refill: their buckets are full, exactly as a new pair's would be. The
// list is in order of last use, so only its tail needs looking at.
func (l *UserLimiter) pruneLocked(now time.Time) {
	for el := l.lru.Back(); el != nil; el = l.lru.Back() {
		if now.Sub(el.Value.(*userBucket).last) < l.idle {
			return
		}
		l.removeLocked(el)
	}
}

func (l *UserLimiter) removeLocked(el *list.Element) {
	delete(l.m, el.Value.(*userBucket).key)
	l.lru.Remove(el)
}
