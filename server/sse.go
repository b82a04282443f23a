package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/shipmyagent/ship/runtime/events"
)

// Defaults for event streams.
const (
	defaultKeepAlive = 30 * time.Second
	defaultSSEBuffer = 256
	// sseWriteTimeout bounds one frame's write, so a client that stopped
	// reading frees its handler instead of holding it forever.
	sseWriteTimeout = 10 * time.Second
)

// handleSSE serves GET /api/sse (every run, whatever its channel) and GET
// /api/sse/{key} (one chat, by chatKey, or one run, by taskId).
func (s *Server) handleSSE(w http.ResponseWriter, r *http.Request) {
	s.serveEvents(w, r, r.PathValue("key"))
}

// serveEvents streams the events of key (a chatKey or taskId; "" for
// all), resuming after Last-Event-ID: the API's and the console's stream.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, key string) {
	var filter func(events.Event) bool
	if key != "" {
		filter = func(e events.Event) bool { return e.ChatKey == key || e.TaskID == key }
	}
	after := lastEventID(r)
	sub, complete := s.opts.Engine.Events().Subscribe(filter, after, s.opts.SSEBuffer)
	defer sub.Close()
	s.stream(w, r, sub, func(events.Event) bool { return false }, func(rc *http.ResponseController) {
		if after > 0 && !complete {
			// The replay window no longer reaches back that far.
			_, _ = fmt.Fprint(w, ": some earlier events are no longer available\n\n")
		}
	})
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
						ErrorCode: "SUBSCRIBER_TOO_SLOW", ErrorMessage: "this stream fell too far behind and was closed; reconnect with Last-Event-ID"}))
				}
				return
			}
			if !write(frame(e)) || stop(e) {
				return
			}
		}
	}
}

func frame(e events.Event) string {
	b, err := e.MarshalJSON()
	if err != nil {
		b = []byte(`{"type":"error","errorCode":"INTERNAL","errorMessage":"event could not be encoded"}`)
	}
	if e.ID == 0 {
		return "data: " + string(b) + "\n\n"
	}
	return "id: " + strconv.FormatUint(e.ID, 10) + "\ndata: " + string(b) + "\n\n"
}
