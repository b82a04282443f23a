package fakelark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

// Frame methods and header values of the long-connection protocol.
const (
	methodControl = int32(larkws.FrameTypeControl)
	methodData    = int32(larkws.FrameTypeData)
	serviceID     = 1
)

// wsConn is one client connection; writes are serialized as gorilla
// requires.
type wsConn struct {
	c    *websocket.Conn
	mu   sync.Mutex
	once sync.Once
	gone chan struct{} // closed when the connection is closed
}

func (c *wsConn) write(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.c.WriteMessage(websocket.BinaryMessage, b)
}

func (c *wsConn) close() {
	c.once.Do(func() {
		_ = c.c.Close()
		close(c.gone)
	})
}

// clientConfig is what the server tells clients about reconnects and pings.
func (s *Server) clientConfig() map[string]int {
	return map[string]int{
		"ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 0,
		"PingInterval": s.opts.PingInterval,
	}
}

// wsEndpoint answers the SDK's bootstrap call with the websocket URL.
func (s *Server) wsEndpoint(w http.ResponseWriter, r *http.Request) {
	s.count(PathWSConf)
	var in struct {
		AppID     string `json:"AppID"`
		AppSecret string `json:"AppSecret"`
	}
	if _, err := readJSON(r, 1<<20, &in); err != nil || !s.credentialsOK(in.AppID, in.AppSecret) {
		writeJSON(w, http.StatusOK, codeMsg(CodeBadSecret, "app_id or app_secret is invalid"))
		return
	}
	url := fmt.Sprintf("ws://%s/ws?device_id=d%d&service_id=%d", s.ln.Addr(), s.next(), serviceID)
	writeJSON(w, http.StatusOK, map[string]any{
		"code": 0, "msg": "ok",
		"data": map[string]any{"URL": url, "ClientConfig": s.clientConfig()},
	})
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered
	}
	conn := &wsConn{c: c, gone: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.close()
		return
	}
	s.conns = append(s.conns, conn)
	s.dialled++
	broadcast(&s.connCh)
	s.mu.Unlock()
	defer s.drop(conn)
	for {
		kind, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if kind != websocket.BinaryMessage {
			continue
		}
		var f larkws.Frame
		if err := f.Unmarshal(msg); err != nil {
			continue
		}
		s.frameIn(conn, f)
	}
}

// frameIn handles one frame from the client: a ping or an event ack.
func (s *Server) frameIn(conn *wsConn, f larkws.Frame) {
	hs := larkws.Headers(f.Headers)
	switch {
	case f.Method == methodControl && hs.GetString(larkws.HeaderType) == string(larkws.MessageTypePing):
		s.mu.Lock()
		s.pings++
		s.mu.Unlock()
		payload, _ := json.Marshal(s.clientConfig()) // a map of ints
		pong := larkws.Frame{
			SeqID: f.SeqID, LogID: f.LogID, Service: f.Service, Method: methodControl,
			Headers: []larkws.Header{{Key: larkws.HeaderType, Value: string(larkws.MessageTypePong)}},
			Payload: payload,
		}
		if b, err := pong.Marshal(); err == nil {
			_ = conn.write(b)
		}
	case f.Method == methodData:
		id := hs.GetString(larkws.HeaderMessageID)
		var resp struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(f.Payload, &resp)
		s.mu.Lock()
		ch := s.acks[id]
		delete(s.acks, id)
		s.mu.Unlock()
		if ch != nil {
			ch <- Ack{Code: resp.Code, Payload: f.Payload}
		}
	}
}

func (s *Server) drop(conn *wsConn) {
	conn.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = slices.DeleteFunc(s.conns, func(c *wsConn) bool { return c == conn })
}

// Disconnect closes every websocket abruptly, as a network failure would;
// clients are expected to reconnect.
func (s *Server) Disconnect() {
	s.mu.Lock()
	conns := slices.Clone(s.conns)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// WaitConnected returns once a websocket client is connected.
func (s *Server) WaitConnected(ctx context.Context) error {
	_, err := s.conn(ctx)
	return err
}

// conn returns the newest connection, waiting for one.
func (s *Server) conn(ctx context.Context) (*wsConn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(s.conns); n > 0 {
			c := s.conns[n-1]
			s.mu.Unlock()
			return c, nil
		}
		ch := s.connCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.done:
			return nil, ErrClosed
		}
	}
}

// PushEvent sends ev as an im.message.receive_v1 event frame over the
// newest websocket (waiting for a client to connect) and returns the
// client's ack. When the connection closes before the ack, the event is
// sent again on the next connection, as the platform re-pushes unacked
// events. Pushing the same Event again is a re-push: same event_id and
// message_id, a new frame.
func (s *Server) PushEvent(ctx context.Context, ev Event) (Ack, error) {
	s.remember(ev.MessageID, ev.info())
	payload := s.EventJSON(ev)
	for {
		conn, err := s.conn(ctx)
		if err != nil {
			return Ack{}, err
		}
		ack, err := s.pushOn(ctx, conn, payload)
		if errors.Is(err, errConnGone) {
			s.drop(conn) // do not pick it again
			continue
		}
		return ack, err
	}
}

var errConnGone = errors.New("fakelark: connection closed before the ack")

// pushOn sends one event frame on conn and waits for its ack.
func (s *Server) pushOn(ctx context.Context, conn *wsConn, payload []byte) (Ack, error) {
	n := s.next()
	frameID := "frame_" + strconv.FormatInt(n, 10)
	f := larkws.Frame{
		SeqID: uint64(n), LogID: uint64(n), Service: serviceID, Method: methodData,
		Headers: []larkws.Header{
			{Key: larkws.HeaderType, Value: string(larkws.MessageTypeEvent)},
			{Key: larkws.HeaderMessageID, Value: frameID},
			{Key: larkws.HeaderSum, Value: "1"},
			{Key: larkws.HeaderSeq, Value: "0"},
			{Key: larkws.HeaderTraceID, Value: "trace_" + strconv.FormatInt(n, 10)},
		},
		Payload: payload,
	}
	b, err := f.Marshal()
	if err != nil {
		return Ack{}, fmt.Errorf("fakelark: encoding frame: %w", err)
	}
	ch := make(chan Ack, 1)
	s.mu.Lock()
	s.acks[frameID] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.acks, frameID)
		s.mu.Unlock()
	}()
	if err := conn.write(b); err != nil {
		return Ack{}, errConnGone
	}
	select {
	case a := <-ch:
		return a, nil
	case <-conn.gone:
		return Ack{}, errConnGone
	case <-ctx.Done():
		return Ack{}, ctx.Err()
	case <-s.done:
		return Ack{}, ErrClosed
	}
}
