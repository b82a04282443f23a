package fakeqq

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Rich media, markdown and channel images, as QQ documents them.
//
// Groups and C2C chats (bot.q.qq.com/wiki/develop/api-v2/server-inter/
// message/send-receive/rich-media.html, "富媒体消息"): a file is first
// uploaded to POST /v2/groups/{group_openid}/files or
// /v2/users/{openid}/files with file_type (1 image png/jpg, 2 video mp4,
// 3 voice silk/amr, 4 file: "暂不开放", not open), url or file_data (the
// bytes, base64) and srv_send_msg (required); the answer's file_info is then
// sent as a message with msg_type 7 and media {file_info}. A file_info from
// a group upload goes only to groups, one from a C2C upload only to C2C
// chats. With msg_type 7 the content must hold something, "such as a
// space" (send.md, "常见错误码").
//
// Guild channels and DMs (bot.q.qq.com/wiki/develop/api/openapi/message/
// post_messages.html, "发送本地图片"): POST /channels/{channel_id}/messages
// (/dms/{guild_id}/messages takes the same parameters) as
// multipart/form-data with the image in the file_image field.
//
// Markdown (message/type/markdown.md, "目前需要内邀开通": by invitation):
// msg_type 2 with markdown {content}; a bot without the permission is
// refused with 50056 "不允许发送 markdown content" and an empty content with
// 50041 "markdown 有空值" (openapi/error/error.md).

// Error codes of rich media and markdown (openapi/error/error.md and
// send.md "常见错误码").
const (
	CodeEmptyMessage     = 50006  // CannotSendEmptyMessage 消息为空
	CodeInvalidForm      = 50035  // InvalidFormBody form-data 内容异常
	CodeMarkdownEmpty    = 50041  // markdown 有空值
	CodeMarkdownRefused  = 50056  // 不允许发送 markdown content
	CodeFileSize         = 304020 // FILE_SIZE 文件大小超限
	CodeMediaUploadFail  = 304082 // upload media info fail 富媒体资源拉取失败
	CodeMediaConvertFail = 304083 // convert media info fail 富媒体资源拉取失败
	CodeBadRequest       = 40034001
)

// MaxInlineMedia is the largest file the fake takes as file_data or
// file_image. QQ's pages name no number; 10 MB is the inline (base64)
// upload limit QQ bot implementations report (hermes-agent's QQ rich media
// reference: "~10MB (inline base64)"), and the fake refuses above it with
// QQ's FILE_SIZE code.
const MaxInlineMedia = 10 << 20

// Upload records one file uploaded to a group or C2C chat.
type Upload struct {
	Path     string // /v2/groups/G1/files
	Kind     string // "group" or "c2c"
	Target   string
	FileType int
	FileName string
	Bytes    []byte
	FileUUID string
	FileInfo string
}

// uploadRoute recognises the two upload endpoints.
func uploadRoute(path string) (kind, target string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 4 || parts[0] != "v2" || parts[3] != "files" || parts[2] == "" {
		return "", "", false
	}
	switch parts[1] {
	case "groups":
		return "group", parts[2], true
	case "users":
		return "c2c", parts[2], true
	}
	return "", "", false
}

// GroupFilesPath is the upload endpoint of a group.
func GroupFilesPath(groupOpenID string) string { return "/v2/groups/" + groupOpenID + "/files" }

// C2CFilesPath is the upload endpoint of a C2C chat.
func C2CFilesPath(userOpenID string) string { return "/v2/users/" + userOpenID + "/files" }

// Uploads returns every accepted upload so far, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// uploadFile is POST /v2/{groups|users}/{id}/files.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, kind, target string) {
	var body struct {
		FileType   *int    `json:"file_type"`
		URL        string  `json:"url"`
		FileData   *string `json:"file_data"`
		SrvSendMsg *bool   `json:"srv_send_msg"`
		FileName   string  `json:"file_name"`
	}
	// base64 of MaxInlineMedia plus the JSON around it.
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxInlineMedia/3*4+64<<10))
	if err := dec.Decode(&body); err != nil {
		writeError(w, qqError(true, http.StatusBadRequest, CodeBadRequest, "invalid request body: "+err.Error()))
		return
	}
	switch {
	case body.FileType == nil || *body.FileType < 1 || *body.FileType > 4:
		writeError(w, qqError(true, http.StatusBadRequest, CodeBadRequest, "file_type must be 1 (image), 2 (video), 3 (voice) or 4 (file)"))
		return
	case *body.FileType == 4:
		writeError(w, qqError(true, http.StatusBadRequest, CodeBadRequest, "file_type 4 (file) is not open (暂不开放)"))
		return
	case body.SrvSendMsg == nil:
		writeError(w, qqError(true, http.StatusBadRequest, CodeBadRequest, "srv_send_msg is required"))
		return
	case body.FileData == nil:
		// The fake serves no internet: a url can't be fetched.
		writeError(w, qqError(true, http.StatusBadRequest, CodeMediaUploadFail, "upload media info fail"))
		return
	}
	data, err := base64.StdEncoding.DecodeString(*body.FileData)
	if err != nil || len(data) == 0 {
		writeError(w, qqError(true, http.StatusBadRequest, CodeMediaConvertFail, "convert media info fail"))
		return
	}
	if len(data) > MaxInlineMedia {
		writeError(w, qqError(true, http.StatusBadRequest, CodeFileSize, "file size exceeds the limit"))
		return
	}
	if !formatOK(*body.FileType, data) {
		writeError(w, qqError(true, http.StatusBadRequest, CodeMediaConvertFail, "convert media info fail"))
		return
	}
	s.mu.Lock()
	n := s.nextIDLocked()
	up := Upload{Path: r.URL.Path, Kind: kind, Target: target, FileType: *body.FileType, FileName: body.FileName,
		Bytes: data, FileUUID: fmt.Sprintf("uuid-%d", n), FileInfo: fmt.Sprintf("fileinfo-%s-%d", kind, n)}
	s.uploads = append(s.uploads, up)
	s.fileInfos[up.FileInfo] = up
	s.broadcastLocked()
	s.mu.Unlock()
	if *body.SrvSendMsg {
		// An active message: QQ no longer delivers those (send.md: "主动推送能力 …
		// 不再提供"), so the fake takes the upload and sends nothing.
		writeJSON(w, http.StatusOK, map[string]any{"file_uuid": up.FileUUID, "file_info": up.FileInfo, "ttl": 0})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"file_uuid": up.FileUUID, "file_info": up.FileInfo, "ttl": 3600})
}

// formatOK checks the file's bytes against the formats the file type
// takes: image png/jpg, video mp4, voice silk/amr.
func formatOK(fileType int, b []byte) bool {
	switch fileType {
	case 1:
		return isPNG(b) || isJPEG(b)
	case 2:
		return len(b) >= 12 && string(b[4:8]) == "ftyp"
	case 3:
		return bytes.HasPrefix(b, []byte("#!SILK")) || bytes.HasPrefix(b, []byte("\x02#!SILK")) || bytes.HasPrefix(b, []byte("#!AMR"))
	}
	return false
}

func isPNG(b []byte) bool  { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) }
func isJPEG(b []byte) bool { return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}) }
func isGIF(b []byte) bool  { return bytes.HasPrefix(b, []byte("GIF8")) }

// channelImage reads a multipart channel or DM message: content, msg_id
// and the image in file_image.
func (s *Server) channelImage(r *http.Request) (content, msgID string, image []byte, e *apiError) {
	r.Body = http.MaxBytesReader(nil, r.Body, MaxInlineMedia+64<<10)
	if err := r.ParseMultipartForm(MaxInlineMedia + 64<<10); err != nil {
		if strings.Contains(err.Error(), "too large") {
			return "", "", nil, qqError(false, http.StatusBadRequest, CodeFileSize, "file size exceeds the limit")
		}
		return "", "", nil, qqError(false, http.StatusBadRequest, CodeInvalidForm, "form-data 内容异常: "+err.Error())
	}
	content, msgID = r.FormValue("content"), r.FormValue("msg_id")
	f, _, err := r.FormFile("file_image")
	if err == nil {
		defer f.Close()
		image, err = io.ReadAll(f)
		if err != nil {
			return "", "", nil, qqError(false, http.StatusBadRequest, CodeInvalidForm, "form-data 内容异常")
		}
		if len(image) > MaxInlineMedia {
			return "", "", nil, qqError(false, http.StatusBadRequest, CodeFileSize, "file size exceeds the limit")
		}
		if !isPNG(image) && !isJPEG(image) && !isGIF(image) {
			return "", "", nil, qqError(false, http.StatusBadRequest, 304017, "UPLOAD_IMAGE 图片上传错误")
		}
	}
	if strings.TrimSpace(content) == "" && image == nil && r.FormValue("image") == "" {
		return "", "", nil, qqError(false, http.StatusBadRequest, CodeEmptyMessage, "消息为空")
	}
	return content, msgID, image, nil
}
