package fakelark

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Paths of the upload APIs, as FailNext and Calls name them.
const (
	PathImages = "/open-apis/im/v1/images"
	PathFiles  = "/open-apis/im/v1/files"
)

// Limits and answers of the upload APIs.
const (
	// MaxImageBytes: "the image may not exceed 10 MB, and an image of size
	// 0 is not taken" (https://open.feishu.cn/document/server-docs/im-v1/image/create,
	// 使用限制).
	MaxImageBytes = 10 << 20
	// MaxFileBytes: "the file may not exceed 30 MB, and empty files may not
	// be uploaded" (https://open.feishu.cn/document/server-docs/im-v1/file/create,
	// 使用限制).
	MaxFileBytes = 30 << 20
	// Error codes of both pages' error tables.
	CodeUploadParam  = 234001 // Invalid request param.
	CodeUploadSize   = 234006 // The file size exceeds the limit.
	CodeUploadFormat = 234011 // Can't recognize the image format.
	CodeUploadEmpty  = 234010 // File size can't be 0.
)

// fileTypes are the file_type values the file upload takes (the same page,
// 请求体 file_type): opus, mp4, pdf, doc, xls, ppt, and stream for any other.
var fileTypes = map[string]bool{"opus": true, "mp4": true, "pdf": true, "doc": true, "xls": true, "ppt": true, "stream": true}

// Upload is one accepted upload: an image (Kind "image", Type the
// image_type) or a file (Kind "file", Type the file_type).
type Upload struct {
	Kind, Type string
	Key        string // the image_key or file_key answered
	Name       string // file_name (files)
	Duration   int    // duration in ms (files), 0 when not sent
	Data       []byte
	At         time.Time
}

// Uploads returns every accepted upload, oldest first.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// readUpload reads a multipart upload whose file part is field, with a
// body of at most limit bytes of file plus room for the other fields. It
// answers the error itself and returns ok false.
func readUpload(w http.ResponseWriter, r *http.Request, field string, limit int64) (form map[string]string, data []byte, ok bool) {
	r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
		return nil, nil, false
	}
	form = map[string]string{}
	found := false
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadSize, "The file size exceeds the limit."))
			return nil, nil, false
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
			return nil, nil, false
		}
		b, err := io.ReadAll(io.LimitReader(p, limit+1))
		if errors.As(err, &tooBig) || int64(len(b)) > limit {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadSize, "The file size exceeds the limit."))
			return nil, nil, false
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
			return nil, nil, false
		}
		if p.FormName() == field {
			data, found = b, true
		} else {
			form[p.FormName()] = string(b)
		}
	}
	if !found {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
		return nil, nil, false
	}
	if len(data) == 0 {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadEmpty, "File size can't be 0."))
		return nil, nil, false
	}
	return form, data, true
}

// imageFormat names the format of an image the upload takes: JPG, JPEG,
// PNG, WEBP, GIF, BMP, ICO, TIFF, HEIC (the image upload page's first
// paragraph); "" for anything else.
func imageFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case bytes.HasPrefix(b, []byte("BM")):
		return "bmp"
	case bytes.HasPrefix(b, []byte("\x00\x00\x01\x00")):
		return "ico"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "tiff"
	case len(b) >= 12 && string(b[4:8]) == "ftyp" && (string(b[8:12]) == "heic" || string(b[8:12]) == "heix" || string(b[8:12]) == "mif1"):
		return "heic"
	}
	return ""
}

// uploadImage is POST /open-apis/im/v1/images (multipart: image_type,
// image).
func (s *Server) uploadImage(w http.ResponseWriter, r *http.Request) {
	if answered, _ := s.failed(w, PathImages); answered || !s.authorized(w, r) {
		return
	}
	form, data, ok := readUpload(w, r, "image", MaxImageBytes)
	if !ok {
		return
	}
	typ := form["image_type"]
	if typ != "message" && typ != "avatar" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
		return
	}
	if imageFormat(data) == "" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadFormat, "Can't recognize the image format."))
		return
	}
	s.mu.Lock()
	key := fmt.Sprintf("img_v3_%d", s.nextLocked())
	s.uploads = append(s.uploads, Upload{Kind: "image", Type: typ, Key: key, Data: data, At: time.Now()})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"image_key": key}})
}

// uploadFile is POST /open-apis/im/v1/files (multipart: file_type,
// file_name, duration, file).
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	if answered, _ := s.failed(w, PathFiles); answered || !s.authorized(w, r) {
		return
	}
	form, data, ok := readUpload(w, r, "file", MaxFileBytes)
	if !ok {
		return
	}
	typ, name := form["file_type"], form["file_name"]
	if !fileTypes[typ] || name == "" {
		writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
		return
	}
	var dur int
	if d := form["duration"]; d != "" {
		if _, err := fmt.Sscan(d, &dur); err != nil {
			writeJSON(w, http.StatusBadRequest, codeMsg(CodeUploadParam, "Invalid request param."))
			return
		}
	}
	s.mu.Lock()
	key := fmt.Sprintf("file_v3_%d", s.nextLocked())
	s.uploads = append(s.uploads, Upload{Kind: "file", Type: typ, Key: key, Name: name, Duration: dur, Data: data, At: time.Now()})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"file_key": key}})
}

// mediaKey checks the key an image, file, media or audio message carries
// against the uploads (message content of each type:
// https://open.feishu.cn/document/server-docs/im-v1/message-content-description/create_json):
// image {"image_key"} of an image upload; file {"file_key"} of a file
// upload; media {"file_key"} of an mp4 upload (an optional cover
// image_key); audio {"file_key"} of an opus upload. Other types need none.
func (s *Server) mediaKey(msgType, content string) (string, error) {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
	}
	switch msgType {
	case "image", "file", "media", "audio":
	default:
		return "", nil
	}
	if err := json.Unmarshal([]byte(content), &c); err != nil {
		return "", fmt.Errorf("invalid %s content", msgType)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	find := func(key, kind string) (Upload, bool) {
		for _, u := range s.uploads {
			if u.Key == key && u.Kind == kind {
				return u, true
			}
		}
		return Upload{}, false
	}
	switch msgType {
	case "image":
		if _, ok := find(c.ImageKey, "image"); !ok {
			return "", fmt.Errorf("invalid image_key %q", c.ImageKey)
		}
		return c.ImageKey, nil
	}
	u, ok := find(c.FileKey, "file")
	switch {
	case !ok:
		return "", fmt.Errorf("invalid file_key %q", c.FileKey)
	case msgType == "media" && u.Type != "mp4":
		return "", fmt.Errorf("media message needs an mp4 file_key, got %s", u.Type)
	case msgType == "audio" && u.Type != "opus":
		return "", fmt.Errorf("audio message needs an opus file_key, got %s", u.Type)
	}
	return c.FileKey, nil
}
