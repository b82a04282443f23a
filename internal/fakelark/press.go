package fakelark

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Toast is the answer to a button press that Feishu shows the presser
// (the callback response's "toast": type info, success, error or warning,
// and content;
// https://open.feishu.cn/document/feishu-cards/card-callback-communication,
// 响应回调请求).
type Toast struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// Press is one button press and how the bot answered it.
type Press struct {
	MessageID string // the card pressed
	OpenID    string // who pressed
	Value     map[string]any
	Toast     *Toast // nil: the bot answered without a toast
	Ack       Ack
}

// Presses returns every press delivered and its answer, oldest first.
func (s *Server) Presses() []Press {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Press(nil), s.presses...)
}

// PressButton presses the button labelled label on the bot's card
// messageID as the user openID, and waits for the bot's answer. Feishu
// delivers a press as the card.action.trigger callback (schema 2.0: header
// event_type card.action.trigger; event.operator, event.action.value —
// the button's callback value as the card declared it —, event.context
// open_message_id and open_chat_id; same page, 回调结构), over the
// long connection as an event frame, and shows the response's toast to
// the presser. The press must come within 3 s of an answer (the same
// page: "the response must come within 3 seconds").
func (s *Server) PressButton(ctx context.Context, messageID, openID, label string) (Press, error) {
	m, value, err := s.button(messageID, label)
	if err != nil {
		return Press{}, err
	}
	payload := s.pressJSON(m, openID, value)
	var ack Ack
	for {
		conn, cerr := s.conn(ctx)
		if cerr != nil {
			return Press{}, cerr
		}
		start := time.Now()
		ack, err = s.pushOn(ctx, conn, payload)
		if err == errConnGone {
			s.drop(conn)
			continue
		}
		if err == nil && time.Since(start) > pressDeadline {
			err = fmt.Errorf("fakelark: the bot answered the press after %v, over Feishu's 3 s", time.Since(start).Round(time.Millisecond))
		}
		break
	}
	if err != nil {
		return Press{}, err
	}
	p := Press{MessageID: messageID, OpenID: openID, Value: value, Ack: ack}
	var resp struct {
		Code int    `json:"code"`
		Data []byte `json:"data"` // the handler's response JSON (base64 on the wire)
	}
	if json.Unmarshal(ack.Payload, &resp) == nil && resp.Code == http.StatusOK && len(resp.Data) > 0 {
		p.Toast = toastOf(resp.Data)
	}
	s.mu.Lock()
	s.presses = append(s.presses, p)
	s.mu.Unlock()
	return p, nil
}

// PressButtonWebhook presses a button as PressButton does, delivering the
// callback to a webhook at url, encrypted with encryptKey and signed like
// an event (card callbacks configured with a request URL come so: same
// page, 配置回调请求地址). The toast is read from the answer's body.
func (s *Server) PressButtonWebhook(ctx context.Context, url, encryptKey, messageID, openID, label string) (Press, error) {
	m, value, err := s.button(messageID, label)
	if err != nil {
		return Press{}, err
	}
	start := time.Now()
	status, body, err := s.PostPlain(ctx, url, encryptKey, s.pressJSON(m, openID, value))
	if err != nil {
		return Press{}, err
	}
	if time.Since(start) > pressDeadline {
		return Press{}, fmt.Errorf("fakelark: the bot answered the press after %v, over Feishu's 3 s", time.Since(start).Round(time.Millisecond))
	}
	p := Press{MessageID: messageID, OpenID: openID, Value: value, Ack: Ack{Code: status, Payload: []byte(body)}}
	if status == http.StatusOK {
		p.Toast = toastOf([]byte(body))
	}
	s.mu.Lock()
	s.presses = append(s.presses, p)
	s.mu.Unlock()
	return p, nil
}

// pressDeadline is how long Feishu waits for the answer to a callback
// (same page: "the response must come within 3 seconds").
const pressDeadline = 3 * time.Second

// toastOf reads the toast of a callback response body, nil when none.
func toastOf(body []byte) *Toast {
	var b struct {
		Toast *Toast `json:"toast"`
	}
	if json.Unmarshal(body, &b) != nil || b.Toast == nil || b.Toast.Content == "" {
		return nil
	}
	return b.Toast
}

// button finds the button labelled label on the bot's card messageID and
// the value its press sends back.
func (s *Server) button(messageID, label string) (Sent, map[string]any, error) {
	s.mu.Lock()
	m, ok := s.sentLocked(messageID)
	var shown Shown
	if ok {
		shown = s.shownLocked(m)
	}
	s.mu.Unlock()
	if !ok || shown.MsgType != "interactive" {
		return Sent{}, nil, fmt.Errorf("fakelark: %s is no card of the bot", messageID)
	}
	for _, b := range RenderCard(shown.Content).Buttons {
		if b.Text == label {
			return m, b.Value, nil
		}
	}
	return Sent{}, nil, fmt.Errorf("fakelark: card %s has no button %q", messageID, label)
}

// pressJSON is the card.action.trigger callback for a press of a button
// with value on card m by openID.
func (s *Server) pressJSON(m Sent, openID string, value map[string]any) []byte {
	n := s.next()
	ms := strconv.FormatInt(time.Now().UnixMicro(), 10)
	body := map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": fmt.Sprintf("ev_press_%d", n), "token": s.opts.VerificationToken, "create_time": ms,
			"event_type": "card.action.trigger", "tenant_key": s.opts.TenantKey, "app_id": s.opts.AppID,
		},
		"event": map[string]any{
			"operator": map[string]any{"tenant_key": s.opts.TenantKey, "user_id": "", "open_id": openID, "union_id": "on_" + openID},
			"token":    fmt.Sprintf("c-press-%d", n),
			"action":   map[string]any{"value": value, "tag": "button"},
			"host":     "im_message",
			"context":  map[string]any{"open_message_id": m.MessageID, "open_chat_id": m.ChatID},
		},
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic("fakelark: " + err.Error()) // built of plain maps
	}
	return b
}
