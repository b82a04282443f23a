package fakeqq

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// apiError is QQ's error body (see qqError for the v2 shape).
type apiError struct {
	status  int
	Code    int    `json:"code"`
	Message string `json:"message"`
	ErrCode int    `json:"err_code,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls[r.URL.Path]++
	trace := "trace-" + strconv.Itoa(s.nextIDLocked())
	s.mu.Unlock()
	w.Header().Set(traceHeader, trace)

	switch {
	case strings.HasPrefix(r.URL.Path, mediaPath):
		s.serveMedia(w, r)
		return
	case r.URL.Path == gatewayPath:
		s.serveGateway(w, r)
		return
	case r.URL.Path == TokenPath && r.Method == http.MethodPost:
		s.serveToken(w, r)
		return
	}
	if e := s.checkAuth(r); e != nil {
		writeError(w, e)
		return
	}
	if e := s.injected(r.URL.Path); e != nil {
		writeError(w, e)
		return
	}
	kind, target, ok := route(r.URL.Path)
	if k, t, up := uploadRoute(r.URL.Path); up && r.Method == http.MethodPost {
		s.uploadFile(w, r, k, t)
		return
	}
	switch {
	case r.URL.Path == GatewayBotPath && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"url": s.gatewayURL(), "shards": 1,
			"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 2},
		})
	case ok && r.Method == http.MethodPost:
		s.postMessage(w, r, kind, target)
	default:
		writeError(w, &apiError{status: http.StatusNotFound, Code: 404, Message: "not found"})
	}
}

// route recognises the four message endpoints.
func route(path string) (kind, target string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 4 && parts[0] == "v2" && parts[1] == "groups" && parts[3] == "messages":
		return "group", parts[2], parts[2] != ""
	case len(parts) == 4 && parts[0] == "v2" && parts[1] == "users" && parts[3] == "messages":
		return "c2c", parts[2], parts[2] != ""
	case len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages":
		return "channel", parts[1], parts[1] != ""
	case len(parts) == 3 && parts[0] == "dms" && parts[2] == "messages":
		return "dm", parts[1], parts[1] != ""
	}
	return "", "", false
}

// checkAuth accepts only "QQBot <token>" with a token the fake issued that
// has not expired, as the platform does.
func (s *Server) checkAuth(r *http.Request) *apiError {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "QQBot ")
	if !ok {
		return &apiError{status: http.StatusUnauthorized, Code: CodeAuthInvalid, Message: "authorization header invalid: want QQBot {access_token}"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.tokens[tok]; !ok || !time.Now().Before(exp) {
		return &apiError{status: http.StatusUnauthorized, Code: CodeTokenExpired, Message: "token not exist or expire"}
	}
	return nil
}

func (s *Server) injected(path string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.fails[path]
	if len(q) == 0 {
		return nil
	}
	f := q[0]
	s.fails[path] = q[1:]
	return &apiError{status: f.Status, Code: f.Code, Message: f.Message}
}

// serveToken is POST /app/getAppAccessToken. Like QQ it hands out the
// current token again (with its remaining lifetime) until that token is
// within 60 s of expiring; old tokens stay valid until they expire.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID        string `json:"appId"`
		ClientSecret string `json:"clientSecret"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&req); err != nil {
		writeError(w, &apiError{status: http.StatusBadRequest, Code: 100007, Message: "invalid request body"})
		return
	}
	if e := s.injected(TokenPath); e != nil {
		writeError(w, e)
		return
	}
	if req.AppID != s.opts.AppID || req.ClientSecret != s.opts.AppSecret {
		// QQ answers bad credentials with HTTP 200 and a code.
		writeJSON(w, http.StatusOK, apiError{Code: CodeBadAppSecret, Message: "invalid appid or secret"})
		return
	}
	s.mu.Lock()
	now := time.Now()
	tok, exp := s.current, s.tokens[s.current]
	if tok == "" || exp.Sub(now) <= tokenRenewWindow {
		tok = fmt.Sprintf("tok-%d", s.nextIDLocked())
		exp = now.Add(s.opts.TokenLifetime)
		s.tokens[tok], s.current = exp, tok
	}
	s.tokenCalls++
	s.broadcastLocked()
	s.mu.Unlock()
	left := max(int64(exp.Sub(now).Round(time.Second)/time.Second), 1)
	writeJSON(w, http.StatusOK, map[string]string{"access_token": tok, "expires_in": strconv.FormatInt(left, 10)})
}

// messageBody is a message as the four message endpoints take it.
type messageBody struct {
	Content  string `json:"content"`
	MsgID    string `json:"msg_id"`
	MsgSeq   int    `json:"msg_seq"`
	MsgType  *int   `json:"msg_type"`
	Markdown *struct {
		Content string `json:"content"`
	} `json:"markdown"`
	Media *struct {
		FileInfo string `json:"file_info"`
	} `json:"media"`
	image []byte // file_image of a multipart channel message
}

// readMessage reads a JSON message, or a multipart one (guild channels and
// DMs only, for file_image).
func (s *Server) readMessage(r *http.Request, kind string) (messageBody, *apiError) {
	var body messageBody
	v2 := kind == "group" || kind == "c2c"
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") && !v2 {
		content, msgID, image, e := s.channelImage(r)
		body.Content, body.MsgID, body.image = content, msgID, image
		return body, e
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody)).Decode(&body); err != nil {
		return body, &apiError{status: http.StatusBadRequest, Code: CodeBadRequest, Message: "invalid request body: " + err.Error()}
	}
	msgType := -1
	if body.MsgType != nil {
		msgType = *body.MsgType
	}
	switch {
	case body.Markdown != nil && !s.opts.Markdown:
		return body, qqError(v2, http.StatusBadRequest, CodeMarkdownRefused, "不允许发送 markdown content")
	case body.Markdown != nil && strings.TrimSpace(body.Markdown.Content) == "":
		return body, qqError(v2, http.StatusBadRequest, CodeMarkdownEmpty, "markdown 有空值")
	case v2 && msgType == 2 && body.Markdown == nil:
		return body, qqError(v2, http.StatusBadRequest, CodeMarkdownEmpty, "markdown 有空值")
	case v2 && msgType == 7:
		// send.md: with msg_type 7 the content must hold a value, such as a space.
		if body.Content == "" {
			return body, qqError(v2, http.StatusBadRequest, CodeEmptyMessage, "消息为空")
		}
		if body.Media == nil || body.Media.FileInfo == "" {
			return body, qqError(v2, http.StatusBadRequest, CodeMediaUploadFail, "upload media info fail")
		}
	case body.Markdown == nil && strings.TrimSpace(body.Content) == "":
		return body, &apiError{status: http.StatusBadRequest, Code: 40034002, Message: "message content is empty"}
	}
	return body, nil
}

// postMessage records a message and answers as QQ does.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, kind, target string) {
	body, e := s.readMessage(r, kind)
	if e != nil {
		writeError(w, e)
		return
	}
	md := ""
	if body.Markdown != nil {
		md = body.Markdown.Content
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var media *Upload
	if body.Media != nil && body.Media.FileInfo != "" {
		// rich-media.md: a group upload goes only to groups, a C2C one only
		// to C2C chats.
		up, ok := s.fileInfos[body.Media.FileInfo]
		if !ok || up.Kind != kind {
			writeError(w, qqError(true, http.StatusBadRequest, CodeMediaUploadFail, "upload media info fail"))
			return
		}
		media = &up
	}
	if e := s.checkReplyLocked(kind, body.Content+"\n"+md, body.MsgID, body.MsgSeq); e != nil {
		s.rejected = append(s.rejected, Rejected{
			Path: r.URL.Path, Content: body.Content, MsgID: body.MsgID, MsgSeq: body.MsgSeq, Status: e.status, Code: e.Code,
		})
		s.broadcastLocked()
		writeError(w, e)
		return
	}
	s.acceptReplyLocked(body.MsgID, body.MsgSeq)
	msgType := -1
	if body.MsgType != nil {
		msgType = *body.MsgType
	}
	now := s.nowLocked()
	sent := Sent{
		Path: r.URL.Path, Kind: kind, Target: target, Content: body.Content,
		MsgID: body.MsgID, MsgSeq: body.MsgSeq, MsgType: msgType, Markdown: md, Media: media, Image: body.image,
		ID: fmt.Sprintf("BOTMSG-%d", s.nextIDLocked()), At: now,
	}
	s.sent = append(s.sent, sent)
	s.broadcastLocked()
	ts := now.Format(time.RFC3339)
	if kind == "group" || kind == "c2c" {
		writeJSON(w, http.StatusOK, map[string]any{"id": sent.ID, "timestamp": ts})
		return
	}
	m := map[string]any{
		"id": sent.ID, "content": body.Content, "timestamp": ts,
		"author": map[string]any{"id": s.opts.BotID, "username": s.opts.BotUsername, "bot": true},
	}
	if kind == "channel" {
		m["channel_id"] = target
	} else {
		m["guild_id"], m["direct_message"] = target, true
	}
	writeJSON(w, http.StatusOK, m)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.ErrCode != 0 {
		e.TraceID = w.Header().Get(traceHeader)
	}
	writeJSON(w, e.status, e)
}
