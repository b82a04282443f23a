package fakelark

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// uuidWindow is how long the real API remembers a send's uuid.
const uuidWindow = time.Hour

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathToken, s.tenantToken)
	mux.HandleFunc("POST /open-apis/auth/v3/app_access_token/internal", s.appToken)
	mux.HandleFunc("GET "+PathBot, s.botInfo)
	mux.HandleFunc("POST "+PathCreate, s.createMessage)
	mux.HandleFunc("POST /open-apis/im/v1/messages/{message_id}/reply", s.replyMessage)
	mux.HandleFunc("GET "+PathResource, s.getResource)
	mux.HandleFunc("POST "+PathImages, s.uploadImage)
	mux.HandleFunc("POST "+PathFiles, s.uploadFile)
	mux.HandleFunc("POST "+PathWSConf, s.wsEndpoint)
	mux.HandleFunc("GET /ws", s.serveWS)
	s.routesEdits(mux) // cards.go, reactions.go
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"code": 404, "msg": "404 page not found"})
	})
	return mux
}

// writeJSON answers v as JSON; the SDK reads codes only from responses
// whose Content-Type is application/json.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakelark: " + err.Error()) // the package builds v itself
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func codeMsg(code int, msg string) map[string]any {
	return map[string]any{"code": code, "msg": msg}
}

// count records a call and returns the injected failure, if one is due.
func (s *Server) count(path string) (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[path]++
	if q := s.fails[path]; len(q) > 0 {
		s.fails[path] = q[1:]
		return q[0], true
	}
	return Failure{}, false
}

// readJSON decodes a request body of at most limit bytes into v.
func readJSON(r *http.Request, limit int64, v any) (tooLong bool, err error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return false, err
	}
	if int64(len(b)) > limit {
		return true, nil
	}
	return false, json.Unmarshal(b, v)
}

func (s *Server) credentialsOK(appID, secret string) bool {
	return appID == s.opts.AppID && subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.AppSecret)) == 1
}

func (s *Server) tenantToken(w http.ResponseWriter, r *http.Request) {
	s.count(PathToken)
	var in struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if _, err := readJSON(r, 1<<20, &in); err != nil || !s.credentialsOK(in.AppID, in.AppSecret) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadSecret, "app secret invalid"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"code": 0, "msg": "ok", "tenant_access_token": s.issue(), "expire": 7200,
	})
}

func (s *Server) appToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if _, err := readJSON(r, 1<<20, &in); err != nil || !s.credentialsOK(in.AppID, in.AppSecret) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadSecret, "app secret invalid"))
		return
	}
	t := s.issue()
	writeJSON(w, http.StatusOK, map[string]any{
		"code": 0, "msg": "ok", "app_access_token": "a" + strings.TrimPrefix(t, "t"), "tenant_access_token": t, "expire": 7200,
	})
}

func (s *Server) issue() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	t := "t-" + strconv.Itoa(s.issued)
	s.tokens[t] = 0
	return t
}

// authorized checks the bearer token and answers the error itself when it
// is missing or invalid.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeMissingToken,
			"Missing access token for authorization. Please make a request with token attached."))
		return false
	}
	s.mu.Lock()
	code, known := s.tokens[tok]
	s.mu.Unlock()
	if !known {
		code = CodeInvalidToken
	}
	if code != 0 {
		writeJSON(w, http.StatusBadRequest, codeMsg(code,
			"Invalid access token for authorization. Please make a request with token attached."))
		return false
	}
	return true
}

// failed answers an injected failure, if one is due. A Lost failure is
// returned instead, for the send to answer once it has recorded the message.
func (s *Server) failed(w http.ResponseWriter, path string) (answered bool, lost *Failure) {
	f, ok := s.count(path)
	if !ok {
		return false, nil
	}
	if f.Status == 0 {
		f.Status = http.StatusBadRequest
	}
	if f.Lost {
		return false, &f
	}
	writeJSON(w, f.Status, codeMsg(f.Code, f.Msg))
	return true, nil
}

func (s *Server) botInfo(w http.ResponseWriter, r *http.Request) {
	if answered, _ := s.failed(w, PathBot); answered || !s.authorized(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"code": 0, "msg": "ok",
		"bot": map[string]any{
			"activate_status": 2, "app_name": s.opts.BotName, "avatar_url": "",
			"ip_white_list": []string{}, "open_id": s.opts.BotOpenID,
		},
	})
}

// sendBody is the body of both send APIs.
type sendBody struct {
	ReceiveID     string `json:"receive_id"`
	MsgType       string `json:"msg_type"`
	Content       string `json:"content"`
	UUID          string `json:"uuid"`
	ReplyInThread bool   `json:"reply_in_thread"`
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	answered, lost := s.failed(w, PathCreate)
	if answered || !s.authorized(w, r) {
		return
	}
	var b sendBody
	if tooLong, err := readJSON(r, MaxBodyBytes, &b); tooLong {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeTooLong, "The message body exceeds the size limit."))
		return
	} else if err != nil {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "invalid request body"))
		return
	}
	idType := r.URL.Query().Get("receive_id_type")
	if idType != "chat_id" && idType != "open_id" {
		writeJSON(w, http.StatusBadRequest, codeMsg(99992402, "field validation failed: receive_id_type"))
		return
	}
	if b.ReceiveID == "" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "receive_id is empty"))
		return
	}
	out := Sent{Path: PathCreate, ChatID: b.ReceiveID, ReceiveIDType: idType}
	s.send(w, b, out, msgInfo{chatID: b.ReceiveID}, lost)
}

func (s *Server) replyMessage(w http.ResponseWriter, r *http.Request) {
	answered, lost := s.failed(w, PathReply)
	if answered || !s.authorized(w, r) {
		return
	}
	var b sendBody
	if tooLong, err := readJSON(r, MaxBodyBytes, &b); tooLong {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeTooLong, "The message body exceeds the size limit."))
		return
	} else if err != nil {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "invalid request body"))
		return
	}
	target := r.PathValue("message_id")
	s.mu.Lock()
	m, ok := s.messages[target]
	if ok && m.threadID == "" && b.ReplyInThread {
		// Replying in thread opens a thread on the target message.
		m.threadID = fmt.Sprintf("omt_%d", s.nextLocked())
		m.rootID = target
		s.messages[target] = m
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, codeMsg(230011, "The message was not found, it may have been withdrawn."))
		return
	}
	// A reply to a message in a thread stays in that thread, whatever
	// reply_in_thread says, as in the real client.
	out := Sent{Path: PathReply, ChatID: m.chatID, ReplyTo: target, ReplyInThread: b.ReplyInThread, ThreadID: m.threadID}
	s.send(w, b, out, msgInfo{chatID: m.chatID, chatType: m.chatType, threadID: m.threadID, rootID: m.rootID}, lost)
}

// send validates the content, applies uuid deduplication, records the
// message and answers with it (or with lost, when the answer is to be lost).
func (s *Server) send(w http.ResponseWriter, b sendBody, out Sent, where msgInfo, lost *Failure) {
	if b.MsgType == "" || b.Content == "" || !json.Valid([]byte(b.Content)) {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "invalid msg_type or content"))
		return
	}
	if b.MsgType == "text" {
		var c struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal([]byte(b.Content), &c); err != nil || c.Text == nil || strings.TrimSpace(*c.Text) == "" {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, "text content is empty"))
			return
		}
		out.Text = *c.Text
	}
	if b.MsgType == "interactive" {
		// A card is at most 30 KB of JSON
		// (https://open.feishu.cn/document/feishu-cards/card-json-v2-structure).
		if len(b.Content) > MaxCardBytes {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeTooLong, "The message body exceeds the size limit."))
			return
		}
		if err := validateCard(b.Content); err != nil {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadCard, err.Error()))
			return
		}
		out.Rendered = RenderCard(b.Content)
		out.Text = out.Rendered.Text
	}
	if key, err := s.mediaKey(b.MsgType, b.Content); err != nil {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeBadRequest, err.Error()))
		return
	} else {
		out.Key = key
	}
	now := time.Now()
	s.mu.Lock()
	if b.UUID != "" {
		if e, ok := s.byUUID[b.UUID]; ok && now.Sub(e.at) < uuidWindow {
			// The real API answers a repeated uuid with the first message.
			s.mu.Unlock()
			writeSent(w, e.data, lost)
			return
		}
	}
	out.MsgType, out.Content, out.UUID, out.At = b.MsgType, b.Content, b.UUID, now
	out.MessageID = fmt.Sprintf("om_%d", s.nextLocked())
	where.threadID = out.ThreadID
	s.messages[out.MessageID] = where
	data := map[string]any{
		"message_id": out.MessageID, "root_id": where.rootID, "parent_id": out.ReplyTo,
		"thread_id": out.ThreadID, "msg_type": out.MsgType,
		"create_time": strconv.FormatInt(now.UnixMilli(), 10), "update_time": strconv.FormatInt(now.UnixMilli(), 10),
		"deleted": false, "updated": false, "chat_id": out.ChatID,
		"sender":   map[string]any{"id": s.opts.AppID, "id_type": "app_id", "sender_type": "app", "tenant_key": s.opts.TenantKey},
		"body":     map[string]any{"content": out.Content},
		"mentions": []any{},
	}
	if b.UUID != "" {
		s.byUUID[b.UUID] = uuidEntry{data: data, at: now}
	}
	s.sent = append(s.sent, out)
	broadcast(&s.sentCh)
	s.mu.Unlock()
	writeSent(w, data, lost)
}

// writeSent answers a successful send, or lost instead. data is never
// modified once built.
func writeSent(w http.ResponseWriter, data map[string]any, lost *Failure) {
	if lost != nil {
		writeJSON(w, lost.Status, codeMsg(lost.Code, lost.Msg))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": data})
}
