package fakeqq

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// mediaPath serves attachment files, as QQ's media servers do: no
// credentials, the URL alone.
const mediaPath = "/media/"

// mediaFiles are the attachment files the fake serves, by name.
type mediaFiles struct {
	mu    sync.Mutex
	files map[string]mediaFile
	gets  []string
}

type mediaFile struct {
	contentType string
	content     []byte
}

// AddMedia makes the fake serve content at the returned URL (as an
// attachment's url or voice_wav_url); name must be unique per server. The
// URL is scheme-relative ("//127.0.0.1:PORT/media/name"), as QQ sends
// attachment URLs ("//multimedia.nt.qq.com.cn/…"): a client completes it
// with the scheme of the API base it was given, this fake's http.
func (s *Server) AddMedia(name, contentType string, content []byte) string {
	m := &s.media
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]mediaFile{}
	}
	m.files[name] = mediaFile{contentType: contentType, content: append([]byte(nil), content...)}
	return "//" + s.ln.Addr().String() + mediaPath + name
}

// MediaGets returns the names of the attachment files downloaded, in order.
func (s *Server) MediaGets() []string {
	s.media.mu.Lock()
	defer s.media.mu.Unlock()
	return append([]string(nil), s.media.gets...)
}

func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, mediaPath)
	s.media.mu.Lock()
	s.media.gets = append(s.media.gets, name)
	f, ok := s.media.files[name]
	s.media.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(f.content)))
	_, _ = w.Write(f.content)
}

// Image is an image attachment for an event's d.attachments (see
// WithAttachments): the fake serves content at its url.
func (s *Server) Image(name, contentType string, width, height int, content []byte) map[string]any {
	return map[string]any{"content_type": contentType, "filename": name, "url": s.AddMedia(name, contentType, content),
		"width": width, "height": height, "size": len(content)}
}

// Voice is a voice attachment: url is the SILK original, voice_wav_url
// the .wav version QQ offers (wav nil: none offered).
func (s *Server) Voice(name string, silk, wav []byte) map[string]any {
	at := map[string]any{"content_type": "voice", "filename": name + ".amr", "url": s.AddMedia(name+".amr", "audio/amr", silk),
		"size": len(silk)}
	if wav != nil {
		at["voice_wav_url"] = s.AddMedia(name+".wav", "audio/wav", wav)
	}
	return at
}

// WithAttachments adds attachments to an event built by GroupAt, C2C, …
func WithAttachments(ev Event, atts ...map[string]any) Event {
	list := make([]any, len(atts))
	for i, a := range atts {
		list[i] = a
	}
	ev.Data["attachments"] = list
	return ev
}
