package fakeqq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway op codes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
	maxSessionLog    = 1000
)

// session is one gateway session: what Resume continues.
type session struct {
	id  string
	seq uint32
	log []logged // dispatched events, replayed on Resume
}

type logged struct {
	seq uint32
	ev  Event
}

// wsConn is one gateway websocket; writes are serialised by wmu.
type wsConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	sess *session // set by READY or RESUMED
}

type frame struct {
	Op int    `json:"op"`
	S  uint32 `json:"s,omitempty"`
	T  string `json:"t,omitempty"`
	ID string `json:"id,omitempty"`
	D  any    `json:"d,omitempty"`
}

func (c *wsConn) write(f frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	return c.ws.WriteJSON(f)
}

// closeWith ends the connection with a close frame carrying code.
func (c *wsConn) closeWith(code int, text string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(writeWait))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

// serveGateway speaks QQ's gateway protocol on one websocket: Hello first,
// then Identify or Resume, heartbeats answered until the client leaves.
func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered already
	}
	c := &wsConn{ws: ws}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		if s.live == c {
			s.live = nil
			s.broadcastLocked()
		}
		s.mu.Unlock()
		_ = ws.Close()
	}()
	hello := map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}
	if c.write(frame{Op: opHello, D: hello}) != nil {
		return
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if json.Unmarshal(data, &f) != nil {
			c.closeWith(4002, "invalid payload")
			return
		}
		switch f.Op {
		case opHeartbeat:
			s.mu.Lock()
			s.heartbeats++
			s.mu.Unlock()
			if c.write(frame{Op: opHeartbeatAck}) != nil {
				return
			}
		case opIdentify:
			if !s.identify(c, f.D) {
				return
			}
		case opResume:
			if !s.resume(c, f.D) {
				return
			}
		default:
			c.closeWith(4001, "invalid opcode")
			return
		}
	}
}

// identify answers op 2 with READY on a new session.
func (s *Server) identify(c *wsConn, d json.RawMessage) bool {
	var id struct {
		Token   string   `json:"token"`
		Intents int      `json:"intents"`
		Shard   []uint32 `json:"shard"`
	}
	_ = json.Unmarshal(d, &id)
	tok, ok := strings.CutPrefix(id.Token, "QQBot ")
	if !ok || !s.tokenValid(tok) {
		c.closeWith(4004, "invalid token")
		return false
	}
	if len(id.Shard) != 2 || id.Shard[0] != 0 || id.Shard[1] != 1 {
		c.closeWith(4010, "invalid shard")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.sess != nil {
		c.closeWith(4005, "already authenticated")
		return false
	}
	sess := &session{id: fmt.Sprintf("session-%d", s.nextIDLocked()), seq: 1}
	s.sessions[sess.id] = sess
	s.intents = id.Intents
	ready := map[string]any{
		"version": 1, "session_id": sess.id, "shard": []uint32{0, 1},
		"user": map[string]any{"id": s.opts.BotID, "username": s.opts.BotUsername, "bot": true},
	}
	if c.write(frame{Op: opDispatch, S: sess.seq, T: "READY", D: ready}) != nil {
		return false
	}
	s.goLiveLocked(c, sess)
	s.identified++
	s.broadcastLocked()
	return true
}

// resume answers op 6: RESUMED, then every event of the session after the
// client's seq. An unknown session gets op 9 (the client must identify).
// botgo sends the bare token here (no "QQBot " prefix); both are accepted.
func (s *Server) resume(c *wsConn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       uint32 `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	if !s.tokenValid(strings.TrimPrefix(rs.Token, "QQBot ")) {
		c.closeWith(4004, "invalid token")
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[rs.SessionID]
	if !ok {
		return c.write(frame{Op: opInvalidSession, D: false}) == nil
	}
	if c.write(frame{Op: opDispatch, T: "RESUMED", D: ""}) != nil {
		return false
	}
	for _, l := range sess.log {
		if l.seq > rs.Seq {
			if c.write(dispatchFrame(l.seq, l.ev)) != nil {
				return false
			}
		}
	}
	s.goLiveLocked(c, sess)
	s.resumed++
	s.broadcastLocked()
	return true
}

// goLiveLocked makes c the connection events go to, closing any other one
// (one shard, one connection), and sends what waited for it.
func (s *Server) goLiveLocked(c *wsConn, sess *session) {
	if old := s.live; old != nil && old != c {
		_ = old.ws.Close()
	}
	c.sess, s.live = sess, c
	pending := s.pending
	s.pending = nil
	for _, ev := range pending {
		s.dispatchLocked(ev)
	}
}

// dispatchLocked sends ev on the live connection, or keeps it for the next.
func (s *Server) dispatchLocked(ev Event) {
	c := s.live
	if c == nil {
		s.pending = append(s.pending, ev)
		return
	}
	sess := c.sess
	if c.write(dispatchFrame(sess.seq+1, ev)) != nil {
		// The connection is dead: the event goes to the next one.
		_ = c.ws.Close()
		s.live = nil
		s.pending = append(s.pending, ev)
		s.broadcastLocked()
		return
	}
	sess.seq++
	sess.log = append(sess.log, logged{seq: sess.seq, ev: ev})
	if len(sess.log) > maxSessionLog {
		sess.log = sess.log[len(sess.log)-maxSessionLog:]
	}
}

func dispatchFrame(seq uint32, ev Event) frame {
	return frame{Op: opDispatch, S: seq, T: ev.Type, ID: ev.ID, D: ev.Data}
}

func (s *Server) tokenValid(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

// DropConnection closes the live gateway connection abruptly, without a
// close frame: the client sees 1006 (abnormal closure), as after a network
// failure. The session stays resumable.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	c := s.live
	s.live = nil
	s.broadcastLocked()
	s.mu.Unlock()
	if c == nil {
		return errors.New("fakeqq: no live gateway connection to drop")
	}
	return c.ws.Close()
}

// RequestReconnect sends op 7 on the live connection: QQ asks the client to
// reconnect and resume.
func (s *Server) RequestReconnect() error {
	s.mu.Lock()
	c := s.live
	s.mu.Unlock()
	if c == nil {
		return errors.New("fakeqq: no live gateway connection")
	}
	return c.write(frame{Op: opReconnect})
}

// WaitIdentified waits until n Identify calls in all were answered with READY.
func (s *Server) WaitIdentified(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.identified >= n })
}

// WaitConnected waits until n connections in all went live (READY or
// RESUMED); WaitConnected(ctx, 2) after a drop waits for the reconnect.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.identified+s.resumed >= n })
}

// Gateway reports how many Identify and Resume calls were answered, how many
// heartbeats arrived, and the intents of the last Identify.
func (s *Server) Gateway() (identified, resumed, heartbeats, intents int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identified, s.resumed, s.heartbeats, s.intents
}
