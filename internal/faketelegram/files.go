package faketelegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"  // photos the fake can measure
	_ "image/jpeg" // photos the fake can measure
	_ "image/png"  // photos the fake can measure
	"io"
	"mime"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on files a bot sends, from https://core.telegram.org/bots/api.
const (
	// #sendphoto: "The photo must be at most 10 MB in size. The photo's
	// width and height must not exceed 10000 in total. Width and height
	// ratio must be at most 20."
	maxPhotoBytes = 10 << 20
	maxPhotoSides = 10000
	maxPhotoRatio = 20
	// #senddocument: "Bots can currently send files of any type of up to
	// 50 MB in size"; #sendvideo, #sendaudio and #sendvoice say the same
	// ("up to 50 MB"); #sending-files: "50 MB max size for other files".
	maxUploadBytes = 50 << 20
	// #sendmediagroup: media "must include 2-10 items".
	minAlbum, maxAlbum = 2, 10
)

// errTooLarge is the answer to an upload over maxUploadBytes. The Bot API
// answers 413 "Request Entity Too Large" (teloxide's
// ApiError::RequestEntityTooLarge, teloxide/teloxide#786 and #829: "Occurs
// when bot tries to upload a file which is larger than 50 MB").
var errTooLarge = &apiError{status: 413, code: 413, desc: "Request Entity Too Large"}

// media is one kind of file a send method carries.
type media struct {
	method string // the single-file method
	field  string // its file parameter, and the Message field of the result
	dir    string // where getFile puts it
}

// mediaKinds are the send methods of https://core.telegram.org/bots/api#sendphoto
// and the four after it, by their InputMedia type.
var mediaKinds = map[string]media{
	"photo":    {"sendPhoto", "photo", "photos"},
	"document": {"sendDocument", "document", "documents"},
	"video":    {"sendVideo", "video", "videos"},
	"audio":    {"sendAudio", "audio", "music"},
	"voice":    {"sendVoice", "voice", "voice"},
}

// SentFile records one file the bot sent, by a single-file method or in an
// album (sendMediaGroup).
type SentFile struct {
	Method       string // "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendVoice" or "sendMediaGroup"
	Type         string // the media's kind: photo, document, video, audio or voice
	ChatID       int64
	ThreadID     int64 // message_thread_id, 0 when absent
	ReplyTo      int64 // the message replied to, 0 when absent
	MessageID    int64 // the message that carries it
	MediaGroupID string
	FileName     string // the upload's file name ("" for a file_id or URL)
	// MIME is the type Telegram would give it: by the file name's
	// extension, else the upload part's Content-Type.
	MIME            string
	Bytes           []byte
	Caption         string // as sent, markup included
	CaptionEntities string // caption_entities JSON as sent, "" without
	ParseMode       string
	FileID          string // the file_id of the sent file (the largest size, for a photo)
	Width, Height   int    // a photo's size in pixels, 0 when not measured
}

// SentFiles returns a copy of every file the bot sent, oldest first.
func (s *Server) SentFiles() []SentFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.sentFiles)
	for i := range out {
		out[i].Bytes = slices.Clone(out[i].Bytes)
	}
	return out
}

// upload is the file of one send, as mediaInput read it.
type upload struct {
	name, mime string
	content    []byte // nil for a known file_id or a URL
	fileID     string // a known file_id sent again
	w, h       int    // a photo's size, once measured
}

// sendFile serves sendPhoto, sendDocument, sendVideo, sendAudio and
// sendVoice: the file parameter holds a multipart upload, "attach://<name>",
// a known file_id or an http(s) URL.
func (s *Server) sendFile(rq *request, typ string) (any, *apiError) {
	k := mediaKinds[typ]
	caption := rq.p["caption"]
	o, e := s.target(rq, k.method, caption)
	if e != nil {
		return nil, e
	}
	o.entities = rq.p["caption_entities"]
	plain, e := captionText(caption, o.mode, o.entities)
	if e != nil {
		return nil, e
	}
	in, e := s.mediaInput(rq, k.field)
	if e != nil {
		return nil, e
	}
	if e := checkMedia(typ, &in); e != nil {
		return nil, e
	}
	o.plain = plain
	return s.deliver(rq, o, func(m map[string]any) {
		id := s.attachLocked(m, typ, in, plain)
		rq.p[k.field] = id
		s.recordFileLocked(m, o, typ, in, id, "")
	})
}

// captionText checks a caption as the real server does: its markup or
// caption_entities are valid, and it is "0-1024 characters after entities
// parsing" (https://core.telegram.org/bots/api#sendphoto, caption).
func captionText(caption, mode, entities string) (string, *apiError) {
	plain, e := formatted(caption, mode, entities)
	if e != nil {
		return "", e
	}
	if utf8.RuneCountInString(plain) > maxCaptionLen {
		return "", badRequest("message caption is too long")
	}
	return plain, nil
}

// checkMedia applies the size rules of https://core.telegram.org/bots/api
// to an upload.
func checkMedia(typ string, in *upload) *apiError {
	if in.content == nil {
		return nil
	}
	if len(in.content) > maxUploadBytes {
		return errTooLarge
	}
	if typ != "photo" {
		return nil
	}
	// #sendphoto: "The photo must be at most 10 MB in size." A larger photo
	// fails to save as one (PHOTO_SAVE_FILE_INVALID, zhukov/webogram#1011).
	if len(in.content) > maxPhotoBytes {
		return badRequest("PHOTO_SAVE_FILE_INVALID")
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(in.content))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		// Bytes Telegram cannot read as a picture: IMAGE_PROCESS_FAILED
		// (https://core.telegram.org/api/errors, 400 errors of uploads).
		return badRequest("IMAGE_PROCESS_FAILED")
	}
	in.w, in.h = cfg.Width, cfg.Height
	// #sendphoto: "width and height must not exceed 10000 in total. Width
	// and height ratio must be at most 20." (PHOTO_INVALID_DIMENSIONS,
	// tdlib/td#2544, nickoala/telepot#135).
	long, short := max(in.w, in.h), min(in.w, in.h)
	if in.w+in.h > maxPhotoSides || long > maxPhotoRatio*short {
		return badRequest("PHOTO_INVALID_DIMENSIONS")
	}
	return nil
}

// mediaInput reads the file of a send: an upload (content, no fileID yet),
// a known file_id or a URL (fileID set).
func (s *Server) mediaInput(rq *request, field string) (upload, *apiError) {
	fh := rq.files[field]
	if v, ok := strings.CutPrefix(rq.p[field], "attach://"); ok {
		// https://core.telegram.org/bots/api#sending-files: "attach://<file_attach_name>"
		// names a multipart part; a name with no part is "media not found".
		if fh = rq.files[v]; fh == nil {
			return upload{}, badRequest("can't parse InputMedia: media not found")
		}
	}
	if fh != nil {
		f, err := fh.Open()
		var content []byte
		if err == nil {
			content, err = io.ReadAll(f)
			f.Close()
		}
		if err != nil {
			return upload{}, badRequest("can't read the uploaded file")
		}
		if content == nil {
			content = []byte{}
		}
		t := mime.TypeByExtension(path.Ext(fh.Filename))
		if t == "" {
			t = fh.Header.Get("Content-Type")
		}
		t, _, _ = strings.Cut(t, ";")
		return upload{name: fh.Filename, mime: t, content: content}, nil
	}
	v := strings.TrimSpace(rq.p[field])
	if v == "" {
		return upload{}, badRequest("there is no %s in the request", field)
	}
	s.mu.Lock()
	known := s.files[v] != nil
	s.mu.Unlock()
	if known {
		return upload{fileID: v}, nil
	}
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return upload{name: path.Base(v)}, nil
	}
	return upload{}, badRequest("wrong file identifier/HTTP URL specified")
}

// attachLocked registers an uploaded file, puts its object in the Message
// m (the fields of https://core.telegram.org/bots/api#message) and returns
// its file_id. The caller holds s.mu.
func (s *Server) attachLocked(m map[string]any, typ string, in upload, caption string) string {
	k := mediaKinds[typ]
	id := in.fileID
	if id == "" {
		s.fileSeq++
		id = fmt.Sprintf("%s-%d", k.field, s.fileSeq)
		ext := path.Ext(in.name)
		if ext == "" && typ == "photo" {
			ext = ".jpg"
		}
		s.addFileLocked(id, fmt.Sprintf("%s/file_%d%s", k.dir, s.fileSeq, ext), in.content)
	}
	f := s.files[id]
	size, unique := len(f.content), f.unique
	obj := map[string]any{"file_id": id, "file_unique_id": unique, "file_size": size}
	switch typ {
	case "photo":
		// "Available sizes of the photo": a thumbnail first, the photo as
		// sent last.
		w, h := in.w, in.h
		if w == 0 || h == 0 {
			w, h = 320, 320
		}
		if s.files[id+"-s"] == nil {
			s.addFileLocked(id+"-s", f.path+".thumb.jpg", f.content[:min(len(f.content), 1000)])
		}
		thumb := map[string]any{"file_id": id + "-s", "file_unique_id": s.files[id+"-s"].unique, "file_size": min(size, 1000),
			"width": max(w/4, 1), "height": max(h/4, 1)}
		obj["width"], obj["height"] = w, h
		m["photo"] = []map[string]any{thumb, obj}
	default:
		if in.name != "" && typ != "voice" {
			obj["file_name"] = in.name
		}
		if in.mime != "" {
			obj["mime_type"] = in.mime
		}
		if typ == "video" || typ == "audio" || typ == "voice" {
			obj["duration"] = 0
		}
		if typ == "video" {
			obj["width"], obj["height"] = 0, 0
		}
		m[k.field] = obj
	}
	if caption != "" {
		m["caption"] = caption
	}
	return id
}

// recordFileLocked records a sent file; the caller holds s.mu.
func (s *Server) recordFileLocked(m map[string]any, o *outgoing, typ string, in upload, id, group string) {
	mid, _ := m["message_id"].(int64)
	content := in.content
	if content == nil {
		if f := s.files[id]; f != nil {
			content = f.content
		}
	}
	s.sentFiles = append(s.sentFiles, SentFile{Method: o.method, Type: typ, ChatID: o.chatID, ThreadID: o.thread,
		ReplyTo: o.replyTo, MessageID: mid, MediaGroupID: group, FileName: in.name, MIME: in.mime,
		Bytes: slices.Clone(content), Caption: o.text, CaptionEntities: givenEntities(o.entities), ParseMode: o.mode,
		FileID: id, Width: in.w, Height: in.h})
}

// inputMedia is one item of sendMediaGroup's media
// (https://core.telegram.org/bots/api#inputmedia).
type inputMedia struct {
	Type            string          `json:"type"`
	Media           string          `json:"media"`
	Caption         string          `json:"caption"`
	ParseMode       string          `json:"parse_mode"`
	CaptionEntities json.RawMessage `json:"caption_entities"`
}

// sendMediaGroup serves https://core.telegram.org/bots/api#sendmediagroup:
// "Use this method to send a group of photos, videos, documents or audios
// as an album. Documents and audio files can be only grouped in an album
// with messages of the same type. On success, an array of Messages that
// were sent is returned."
func (s *Server) sendMediaGroup(rq *request) (any, *apiError) {
	raw := strings.TrimSpace(rq.p["media"])
	if raw == "" {
		return nil, badRequest("parameter \"media\" is required")
	}
	var items []inputMedia
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, badRequest("can't parse media JSON object")
	}
	// media: "must include 2-10 items".
	if len(items) < minAlbum || len(items) > maxAlbum {
		return nil, badRequest("wrong number of media specified: %d, want 2-10", len(items))
	}
	type prepared struct {
		o     *outgoing
		typ   string
		in    upload
		plain string
	}
	var all []prepared
	for i, it := range items {
		switch it.Type {
		case "photo", "video", "document", "audio":
		default:
			// sendMediaGroup takes "InputMediaAudio, InputMediaDocument,
			// InputMediaPhoto and InputMediaVideo".
			return nil, badRequest("can't parse InputMedia: unsupported media type %q", it.Type)
		}
		if it.Type != items[0].Type && (it.Type == "document" || it.Type == "audio" ||
			items[0].Type == "document" || items[0].Type == "audio") {
			return nil, badRequest("%s can't be mixed with other media types", mixed(items[0].Type, it.Type))
		}
		o, e := s.target(rq, "sendMediaGroup", it.Caption)
		if e != nil {
			return nil, e
		}
		o.mode, o.entities, o.kb = it.ParseMode, string(it.CaptionEntities), nil
		if o.entities == "null" {
			o.entities = ""
		}
		plain, e := captionText(it.Caption, o.mode, o.entities)
		if e != nil {
			return nil, e
		}
		o.plain = plain
		field := "media." + strconv.Itoa(i)
		rq.p[field] = it.Media
		in, e := s.mediaInput(rq, field)
		if e != nil {
			return nil, e
		}
		if e := checkMedia(it.Type, &in); e != nil {
			return nil, e
		}
		all = append(all, prepared{o: o, typ: it.Type, in: in, plain: plain})
	}
	s.mu.Lock()
	s.albumSeq++
	group := fmt.Sprintf("1%017d", s.albumSeq)
	s.mu.Unlock()
	msgs := make([]any, 0, len(all))
	for _, p := range all {
		m, e := s.deliver(rq, p.o, func(m map[string]any) {
			m["media_group_id"] = group
			id := s.attachLocked(m, p.typ, p.in, p.plain)
			s.recordFileLocked(m, p.o, p.typ, p.in, id, group)
		})
		if e != nil {
			return nil, e
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// mixed names the type that may not be mixed: the document or audio.
func mixed(a, b string) string {
	if a == "document" || a == "audio" {
		return a
	}
	return b
}
