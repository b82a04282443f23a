// Package fakehttp is the loopback HTTP server under the model API fakes
// (fakeopenai, fakeanthropic): a listener on 127.0.0.1, a Close that lets
// the requests being answered finish, and a bounded log of the requests a
// fake recorded, and how both cut a streamed reply into pieces and pace
// them. It does not import "testing": load programs use the fakes too.
package fakehttp

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server serves one handler on a free port of 127.0.0.1. All methods are
// safe for concurrent use.
type Server struct {
	listener net.Listener
	http     *http.Server

	mu      sync.Mutex
	active  map[net.Conn]bool // connections with a request being answered
	closing bool              // set by Close
	drained chan struct{}     // closed once closing and no connection is active

	closeOnce sync.Once
	served    chan struct{} // closed when Serve returns
}

// Start serves the handler that handler returns for the new server,
// which it is given before any request is served (a fake keeps it there
// to ask Closing); name prefixes the error ("fakeopenai: listen: …").
func Start(name string, handler func(*Server) http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	s := &Server{listener: ln, served: make(chan struct{}), drained: make(chan struct{}), active: map[net.Conn]bool{}}
	s.http = &http.Server{Handler: handler(s), ConnState: s.connState, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL returns the server root, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Closing reports whether Close has begun: a fake answers requests that
// still arrive on an open connection with 503.
func (s *Server) Closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Close stops accepting connections, waits for the requests being answered
// to finish, then closes every connection. It is safe to call more than
// once.
//
// (http.Server.Shutdown is not used: it waits up to five seconds for
// connections a client dialled but never used, which the Go transport
// leaves behind under concurrent load.)
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.http.SetKeepAlivesEnabled(false)
		_ = s.listener.Close()
		s.mu.Lock()
		s.closing = true
		if len(s.active) == 0 {
			close(s.drained)
		}
		s.mu.Unlock()
		<-s.drained
		_ = s.http.Close()
		<-s.served
	})
}

// connState tracks connections that are reading a request or writing a
// response: a connection stays active until its response has been fully
// sent, so Close never cuts one off.
func (s *Server) connState(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if state == http.StateActive {
		if !s.closing || len(s.active) > 0 { // once drained, Close no longer waits
			s.active[c] = true
		}
		return
	}
	if !s.active[c] {
		return
	}
	delete(s.active, c)
	if s.closing && len(s.active) == 0 {
		close(s.drained)
	}
}

// Log keeps the requests a fake recorded, copied in and out with Clone so
// no caller can change them. With Max > 0 only the latest Max are kept;
// Count still counts every one. The zero value (with Clone set) is ready.
type Log[T any] struct {
	Max   int
	Clone func(T) T

	mu    sync.Mutex
	items []T
	count int
}

// Add records r.
func (l *Log[T]) Add(r T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	l.items = append(l.items, l.Clone(r))
	if n := l.Max; n > 0 && len(l.items) >= 2*n {
		l.items = append([]T(nil), l.items[len(l.items)-n:]...)
	}
}

// All returns copies of the kept requests in arrival order.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.items
	if n := l.Max; n > 0 && len(kept) > n {
		kept = kept[len(kept)-n:]
	}
	out := make([]T, len(kept))
	for i, r := range kept {
		out[i] = l.Clone(r)
	}
	return out
}

// Count returns how many requests were recorded.
func (l *Log[T]) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}
