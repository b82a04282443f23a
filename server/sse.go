package server

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
)

// Defaults for event streams.
const (
	defaultKeepAlive = 30 * time.Second
	defaultSSEBuffer = 256
	// An idle stream costs a goroutine, a connection and its subscription's
	// buffer (about 56 KB in all): 3,000 of them took ship from 23 to
	// 190 MB. One client seldom needs more than a few (a browser keeps at
	// most 6 connections to a host over HTTP/1.1).
	defaultSSEMaxPerClient = 16
	defaultSSEMaxTotal     = 256
	// sseWriteTimeout bounds one frame's write, so a client that stopped
	// reading frees its handler instead of holding it forever.
	sseWriteTimeout = 10 * time.Second
)

// handleSSE serves GET /api/sse (every run, whatever its channel) and GET
// /api/sse/{key} (one chat, by chatKey, or one run, by taskId).
func (s *Server) handleSSE(w http.ResponseWriter, r *http.Request) {
	if ierr := checkFraming(r); ierr != nil {
		writeError(w, r, ierr.status, ierr.code, ierr.message)
		return
	}
	s.serveEvents(w, r, r.PathValue("key"))
}

// framingNamed is the value of the events query parameter that asks for
// seed 000's framing: an "event: <type>" line before each frame's data, for
// clients that listen by name (EventSource.addEventListener("content", …)).
// Without it frames are seed 003's, data only, which EventSource.onmessage
// receives; a named frame never reaches onmessage, so the default stays.
const framingNamed = "named"

// checkFraming refuses an events query parameter other than "named": a
// typo must not quietly give the other framing.
func checkFraming(r *http.Request) *inputError {
	if v := r.URL.Query().Get("events"); v != "" && v != framingNamed {
		return invalid("events=%s: the only value is %q (an event: line per frame); leave it out for data-only frames", v, framingNamed)
	}
	return nil
}

// namedFrames reports whether r asked for seed 000's framing.
func namedFrames(r *http.Request) bool { return r.URL.Query().Get("events") == framingNamed }

// serveEvents streams the events of key (a chatKey or taskId; "" for
// all), resuming after Last-Event-ID: the API's and the console's stream.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, key string) {
	release, ok := s.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	var filter func(events.Event) bool
	if key != "" {
		filter = func(e events.Event) bool { return e.ChatKey == key || e.TaskID == key }
	}
	after := lastEventID(r)
	sub, complete := s.opts.Door.Subscribe(filter, after, s.opts.SSEBuffer)
	defer sub.Close()
	s.stream(w, r, sub, func(events.Event) bool { return false }, func(rc *http.ResponseController) {
		if after > 0 && !complete {
			// The replay window no longer reaches back that far.
			_, _ = fmt.Fprint(w, ": some earlier events are no longer available\n\n")
		}
	})
}

// openStream takes one of the event stream slots for r's client, to be
// given back with release when the stream ends; at either cap it answers
// 503 itself and returns false.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, refusal := s.streams.take(clientAddr(r))
	if refusal != "" {
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, r, http.StatusServiceUnavailable, codeTooManyStreams, refusal)
		return nil, false
	}
	return release, true
}

// clientAddr is the address a request came from, without its port: the
// client whose streams are counted together.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// streamSlots counts the open event streams, per client address and in
// all, so that no client, and no crowd of them, can hold streams without
// bound.
type streamSlots struct {
	maxPerClient, maxTotal int

	mu       sync.Mutex
	total    int
	byClient map[string]int
}

func newStreamSlots(maxPerClient, maxTotal int) *streamSlots {
	return &streamSlots{maxPerClient: maxPerClient, maxTotal: maxTotal, byClient: make(map[string]int)}
}

// take opens a slot for client. refusal is "" when it did, else why not,
// for the client to read; release gives the slot back (call it once).
func (l *streamSlots) take(client string) (release func(), refusal string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byClient[client] >= l.maxPerClient:
		return nil, fmt.Sprintf("this address has reached the limit of %d open event streams per client; close one and try again", l.maxPerClient)
	case l.total >= l.maxTotal:
		return nil, fmt.Sprintf("the server has reached its limit of %d open event streams; try again shortly", l.maxTotal)
	}
	l.total++
	l.byClient[client]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		l.byClient[client]--
		if l.byClient[client] == 0 {
			delete(l.byClient, client) // a map of every address ever seen would only grow
		}
	}, ""
}

func lastEventID(r *http.Request) uint64 {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("lastEventId")
	}
	id, _ := strconv.ParseUint(v, 10, 64)
	return id
}

// stream writes sub's events as server-sent events until stop accepts one
// (it is written first), the client goes away, or the subscription is cut
// off for falling behind: then the client gets an error event and the
// stream ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, sub *events.Subscription, stop func(events.Event) bool, opening func(*http.ResponseController)) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx would otherwise buffer the stream
	w.WriteHeader(http.StatusOK)
	if opening != nil {
		opening(rc)
	}
	if rc.Flush() != nil {
		return
	}
	named := namedFrames(r)
	keep := time.NewTicker(s.opts.SSEKeepAlive)
	defer keep.Stop()
	write := func(frame string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		if _, err := fmt.Fprint(w, frame); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-keep.C:
			if !write(": keep-alive\n\n") {
				return
			}
		case e, ok := <-sub.C:
			if !ok {
				if sub.Overflowed() {
					s.log.Warn().Str("requestId", requestID(r.Context())).Msg("event subscriber fell behind; closing its stream")
					write(frame(events.Event{Type: events.TypeError, Timestamp: time.Now().UnixMilli(),
						ErrorCode: "SUBSCRIBER_TOO_SLOW", ErrorMessage: "this stream fell too far behind and was closed; reconnect with Last-Event-ID"}, named))
				}
				return
			}
			if !write(frame(e, named)) || stop(e) {
				return
			}
		}
	}
}

// frame is one server-sent event: its id when it has one, with named an
// "event: <type>" line, and the event's JSON as data.
func frame(e events.Event, named bool) string {
	b, err := e.MarshalJSON()
	if err != nil {
		e.Type = events.TypeError
		b = []byte(`{"type":"error","errorCode":"INTERNAL","errorMessage":"event could not be encoded"}`)
	}
	var f strings.Builder
	if e.ID != 0 {
		f.WriteString("id: " + strconv.FormatUint(e.ID, 10) + "\n")
	}
	if named {
		f.WriteString("event: " + e.Type + "\n")
	}
	f.WriteString("data: " + string(b) + "\n\n")
	return f.String()
}
