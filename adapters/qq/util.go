package qq

import (
	"container/list"
	"sync"
)

// recentMax bounds recentSet; re-deliveries concern recent events, and
// older ones are still caught through the ChatStore (AcceptOnce).
const recentMax = 10_000

// recentSet remembers the most recent keys (event ids).
type recentSet struct {
	mu  sync.Mutex
	m   map[string]*list.Element
	lru list.List
}

// add records key and reports whether it is new.
func (s *recentSet) add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*list.Element)
	}
	if _, ok := s.m[key]; ok {
		return false
	}
	s.m[key] = s.lru.PushFront(key)
	if s.lru.Len() > recentMax {
		delete(s.m, s.lru.Remove(s.lru.Back()).(string))
	}
	return true
}

// remove forgets key, so a later delivery is handled again.
func (s *recentSet) remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[key]; ok {
		s.lru.Remove(el)
		delete(s.m, key)
	}
}
