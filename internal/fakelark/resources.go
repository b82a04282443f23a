package fakelark

import (
	"net/http"
	"strconv"
	"sync"
)

// PathResource is the message resource API: the files, images and audio
// of a message a user sent.
const PathResource = "/open-apis/im/v1/messages/{message_id}/resources/{file_key}"

// Resource errors as the real API answers them.
const (
	CodeResourceParam    = 234001 // invalid request param (a wrong type)
	CodeResourceNotFound = 234003 // the file is not part of the message
)

// resources are the files the fake serves, by message id and file key.
type resources struct {
	mu    sync.Mutex
	files map[[2]string]resource
	gets  []ResourceGet
}

type resource struct {
	typ, name, mime string
	content         []byte
}

// ResourceGet is one recorded call of the message resource API.
type ResourceGet struct {
	MessageID, FileKey, Type string
}

// AddResource makes the resource API serve content for fileKey of
// messageID: typ is "image" (images, also in posts) or "file" (files,
// audio, video), as a download must ask for it; name goes in the
// Content-Disposition header.
func (s *Server) AddResource(messageID, fileKey, typ, name, mime string, content []byte) {
	r := &s.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[[2]string]resource{}
	}
	r.files[[2]string{messageID, fileKey}] = resource{typ: typ, name: name, mime: mime, content: append([]byte(nil), content...)}
}

// ResourceGets returns the resource downloads asked for, in order.
func (s *Server) ResourceGets() []ResourceGet {
	s.res.mu.Lock()
	defer s.res.mu.Unlock()
	return append([]ResourceGet(nil), s.res.gets...)
}

// getResource serves GET PathResource?type=image|file.
func (s *Server) getResource(w http.ResponseWriter, r *http.Request) {
	if answered, _ := s.failed(w, PathResource); answered || !s.authorized(w, r) {
		return
	}
	g := ResourceGet{MessageID: r.PathValue("message_id"), FileKey: r.PathValue("file_key"), Type: r.URL.Query().Get("type")}
	s.res.mu.Lock()
	s.res.gets = append(s.res.gets, g)
	f, ok := s.res.files[[2]string{g.MessageID, g.FileKey}]
	s.res.mu.Unlock()
	switch {
	case g.Type != "image" && g.Type != "file":
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeResourceParam, "invalid param: type must be image or file"))
		return
	case !ok:
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeResourceNotFound, "the file does not belong to the message"))
		return
	case f.typ != g.Type:
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeResourceParam, "invalid param: the resource type does not match the file"))
		return
	}
	mime := f.mime
	if mime == "" {
		mime = "application/octet-stream"
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("Content-Disposition", `attachment; filename="`+f.name+`"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.content)))
	_, _ = w.Write(f.content)
}

// Audio is a voice message (Feishu records Ogg/Opus) of durationMs.
func (s *Server) Audio(chatID, chatType, userOpenID, fileKey string, durationMs int) Event {
	return s.newEvent(chatID, chatType, userOpenID, "audio", map[string]any{"file_key": fileKey, "duration": durationMs}, nil)
}

// File is a file message.
func (s *Server) File(chatID, chatType, userOpenID, fileKey, fileName string) Event {
	return s.newEvent(chatID, chatType, userOpenID, "file", map[string]any{"file_key": fileKey, "file_name": fileName}, nil)
}
