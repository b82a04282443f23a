package qq

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/tencent-connect/botgo/dto"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Files out. Groups and C2C chats take rich media in two steps
// (bot.q.qq.com/wiki/develop/api-v2/server-inter/message/send-receive/
// rich-media.html, "富媒体消息"): the file is uploaded to
// POST /v2/groups/{group_openid}/files or /v2/users/{openid}/files with
// srv_send_msg false (so it is not an active message, which QQ no longer
// delivers), and the file_info of the answer goes out as a passive reply
// with msg_type 7 and media {file_info}. The file travels as file_data
// (base64): ship has no public URL to give QQ. file_type 1 is an image
// (png/jpg), 2 a video (mp4), 3 voice (silk/amr); 4, any file, is
// documented as not open ("暂不开放"), so other files are not offered.
// Guild channels and DMs take an image as multipart/form-data in
// file_image on their message endpoint (bot.q.qq.com/wiki/develop/api/
// openapi/message/post_messages.html, "发送本地图片").
//
// botgo v0.2.1 has no file_data, sends srv_send_msg false not at all
// (omitempty, while QQ requires it), decodes file_info as bytes and has no
// multipart: these calls are made here with the adapter's own HTTP client
// and access token.

// The adapter sends files; it has no buttons (QQ's keyboards need a
// permission of their own), so questions come as numbered lists.
var _ dispatch.FileSender = (*Adapter)(nil)

// maxMedia is the largest file sent, of any kind. QQ's pages give no
// number; 10 MB is the limit QQ bot implementations report for inline
// (base64) uploads (hermes-agent's QQ rich media reference, "~10MB (inline
// base64)"), and QQ answers a larger one with 304020 FILE_SIZE.
const maxMedia = 10 << 20

// maxFilesPerSend: QQ sends one file per message and takes at most 5
// replies to a message; one is left for a caption.
const maxFilesPerSend = 4

// uploadTimeout bounds one upload or media message: QQ fetches and
// converts the file before it answers.
const uploadTimeout = 60 * time.Second

// fileTypes are QQ's file_type values by dispatch media kind.
var fileTypes = map[string]int{"image": 1, "video": 2, "voice": 3}

// mediaFormats are the MIME types QQ takes per kind: rich-media.md
// "资源格式要求" for groups and C2C; channels take images (png, jpg, gif).
var mediaFormats = map[string][]string{
	"image": {"image/png", "image/jpeg"},
	"video": {"video/mp4"},
	"voice": {"audio/silk", "audio/amr"},
}

// FileLimits says what req's chat takes: images, videos and voice up to
// 10 MB in groups and C2C chats, images in guild channels and DMs; four
// files per send, each its own message, and a caption as a text before
// them (it uses a reply of its own).
func (a *Adapter) FileLimits(req dispatch.RequestContext) dispatch.FileLimits {
	l := dispatch.FileLimits{MaxBytes: map[string]int64{}, MaxFiles: maxFilesPerSend, MaxCaption: MaxMessageChars}
	switch req.ChatType {
	case kindGroup, kindC2C:
		for kind := range fileTypes {
			l.MaxBytes[kind] = maxMedia
		}
	case kindChannel, kindDM:
		l.MaxBytes["image"] = maxMedia
	}
	return l
}

// SendFiles sends each file as a message of its own, after the caption
// (rendered like a reply) as a text: in groups and C2C chats uploaded and
// sent as rich media (msg_type 7) in reply to req's message, in guild
// channels and DMs as an image message. It returns QQ's file_info of each
// file (groups, C2C) or the id of its message (channels, DMs). Every file
// is checked and read before anything is sent: a kind, format or size QQ
// does not take is refused with nothing sent.
func (a *Adapter) SendFiles(ctx context.Context, req dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if !started {
		return nil, fmt.Errorf("qq send files: %w", errNotRunning)
	}
	data, err := a.readFiles(req, files)
	if err != nil {
		return nil, fmt.Errorf("qq send files: %w", err)
	}
	// Claim the replies the files need before the caption takes one, so
	// a caption never goes without its files for want of replies.
	if err := a.replies.claim(req.ChatType, req.MessageID, false, func(left int) (int, error) {
		need := len(files)
		if strings.TrimSpace(caption) != "" {
			need++
		}
		if left >= 0 && need > left {
			return 0, fmt.Errorf("the files need %d QQ messages but only %d replies to this message are left: %w",
				need, left, dispatch.ErrReplyLimit)
		}
		return len(files), nil
	}); err != nil {
		return nil, fmt.Errorf("qq send files: %w", err)
	}
	if strings.TrimSpace(caption) != "" {
		if _, err := a.send(ctx, req, caption, false); err != nil {
			a.replies.release(req.MessageID, len(files))
			return nil, fmt.Errorf("qq send files: sending the caption: %w", err)
		}
	}
	ids := make([]string, 0, len(files))
	for i, f := range files {
		id, err := a.sendFile(ctx, req, f, data[i])
		if err != nil {
			unsent := len(files) - i
			if !refusedForSure(err) {
				unsent--
			}
			a.replies.release(req.MessageID, unsent)
			err = fmt.Errorf("sending %s: %w", f.Name, err)
			if i > 0 {
				return ids, &dispatch.PartError{Part: i + 1, Parts: len(files), Err: err}
			}
			return nil, fmt.Errorf("qq send files: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// readFiles checks every file against what req's chat takes and reads it.
func (a *Adapter) readFiles(req dispatch.RequestContext, files []dispatch.OutFile) ([][]byte, error) {
	limits := a.FileLimits(req)
	switch {
	case len(files) == 0:
		return nil, errors.New("no files to send")
	case len(limits.MaxBytes) == 0:
		return nil, fmt.Errorf("QQ takes no files in a %s chat", kindName(req.ChatType))
	case len(files) > limits.MaxFiles:
		return nil, fmt.Errorf("%d files: QQ sends one file per message, so at most %d go in one send", len(files), limits.MaxFiles)
	}
	out := make([][]byte, len(files))
	for i, f := range files {
		limit, ok := limits.MaxBytes[f.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: QQ takes no %s files in a %s chat (it takes %s)", f.Name, f.Kind, kindName(req.ChatType), kindList(limits))
		}
		if f.Bytes > limit {
			return nil, fmt.Errorf("%s is %d bytes; QQ takes %s files of at most %d bytes (%d MB)", f.Name, f.Bytes, f.Kind, limit, limit>>20)
		}
		if !formatOK(req.ChatType, f) {
			return nil, fmt.Errorf("%s (%s): QQ takes %s files only as %s", f.Name, f.MIME, f.Kind, strings.Join(formats(req.ChatType, f.Kind), ", "))
		}
		if f.Open == nil {
			return nil, fmt.Errorf("%s: nothing to read it from", f.Name)
		}
		b, err := adapters.ReadOutFile(f, limit)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func formats(chatType, kind string) []string {
	if (chatType == kindChannel || chatType == kindDM) && kind == "image" {
		return []string{"image/png", "image/jpeg", "image/gif"}
	}
	return mediaFormats[kind]
}

// formatOK reports whether f's type is one QQ takes for its kind, by MIME
// type (parameters ignored) or, for voice, whose MIME types vary, by
// extension.
func formatOK(chatType string, f dispatch.OutFile) bool {
	mt, _, _ := strings.Cut(strings.ToLower(f.MIME), ";")
	mt = strings.TrimSpace(mt)
	for _, ok := range formats(chatType, f.Kind) {
		if mt == ok {
			return true
		}
	}
	ext := strings.ToLower(path.Ext(f.Name))
	return f.Kind == "voice" && (ext == ".silk" || ext == ".amr")
}

func kindList(l dispatch.FileLimits) string {
	var kinds []string
	for _, k := range []string{"image", "video", "voice"} {
		if _, ok := l.MaxBytes[k]; ok {
			kinds = append(kinds, k)
		}
	}
	return strings.Join(kinds, ", ")
}

// sendFile sends one checked file and returns its id.
func (a *Adapter) sendFile(ctx context.Context, req dispatch.RequestContext, f dispatch.OutFile, data []byte) (string, error) {
	switch req.ChatType {
	case kindGroup, kindC2C:
		info, err := a.upload(ctx, req, f, data)
		if err != nil {
			return "", err
		}
		return info, a.sendMedia(ctx, req, info)
	case kindChannel, kindDM:
		return a.sendImage(ctx, req, f, data)
	}
	return "", fmt.Errorf("qq: no files in a %q chat", req.ChatType)
}

// upload puts a file on QQ for req's group or C2C chat and returns its
// file_info.
func (a *Adapter) upload(ctx context.Context, req dispatch.RequestContext, f dispatch.OutFile, data []byte) (string, error) {
	p := "/v2/groups/" + req.ChatID + "/files"
	if req.ChatType == kindC2C {
		p = "/v2/users/" + req.ChatID + "/files"
	}
	body, err := json.Marshal(map[string]any{
		"file_type": fileTypes[f.Kind], "file_data": base64.StdEncoding.EncodeToString(data),
		"srv_send_msg": false, "file_name": f.Name,
	})
	if err != nil {
		return "", fmt.Errorf("encoding the upload: %w", err)
	}
	var out struct {
		FileUUID string `json:"file_uuid"`
		FileInfo string `json:"file_info"`
	}
	err = a.retry(ctx, req, "qq upload", nil, func() error {
		return a.raw(ctx, p, "application/json", body, &out)
	})
	if err != nil {
		return "", err
	}
	if out.FileInfo == "" {
		return "", errors.New("qq upload: QQ gave no file_info")
	}
	return out.FileInfo, nil
}

// mediaReply is a rich media message (msg_type 7). QQ wants some content
// with it, "such as a space" (send.md, "常见错误码").
type mediaReply struct {
	Content string    `json:"content"`
	MsgType int       `json:"msg_type"`
	Media   mediaInfo `json:"media"`
	MsgID   string    `json:"msg_id,omitempty"`
	MsgSeq  uint32    `json:"msg_seq,omitempty"`
}

type mediaInfo struct {
	FileInfo string `json:"file_info"`
}

// GetEventID implements dto.APIMessage.
func (mediaReply) GetEventID() string { return "" }

// GetSendType implements dto.APIMessage: the message endpoint.
func (mediaReply) GetSendType() dto.SendType { return dto.Text }

// sendMedia sends an uploaded file as a passive reply to req's message,
// with a msg_seq of its own.
func (a *Adapter) sendMedia(ctx context.Context, req dispatch.RequestContext, info string) error {
	seq := a.replies.nextSeq(req.MessageID)
	return a.retry(ctx, req, "qq media message", func() { seq = a.replies.nextSeq(req.MessageID) }, func() error {
		m := mediaReply{Content: " ", MsgType: int(dto.RichMediaMsg), Media: mediaInfo{FileInfo: info}, MsgID: req.MessageID, MsgSeq: seq}
		a.apiMu.Lock()
		defer a.apiMu.Unlock()
		var err error
		if req.ChatType == kindGroup {
			_, err = a.api.PostGroupMessage(ctx, req.ChatID, m)
		} else {
			_, err = a.api.PostC2CMessage(ctx, req.ChatID, m)
		}
		return describe(err)
	})
}

// sendImage sends an image to a guild channel or DM as multipart/form-data
// (file_image) in reply to req's message, and returns the message's id.
func (a *Adapter) sendImage(ctx context.Context, req dispatch.RequestContext, f dispatch.OutFile, data []byte) (string, error) {
	p := "/channels/" + req.ChatID + "/messages"
	if req.ChatType == kindDM {
		p = "/dms/" + req.ChatID + "/messages"
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if req.MessageID != "" {
		_ = mw.WriteField("msg_id", req.MessageID) // writes to a bytes.Buffer do not fail
	}
	fw, err := mw.CreateFormFile("file_image", f.Name)
	if err == nil {
		_, err = fw.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", fmt.Errorf("encoding the image: %w", err)
	}
	var out struct {
		ID string `json:"id"`
	}
	err = a.retry(ctx, req, "qq image message", nil, func() error {
		return a.raw(ctx, p, mw.FormDataContentType(), buf.Bytes(), &out)
	})
	return out.ID, err
}

// raw POSTs body to the API path p with the access token and decodes the
// answer into out; QQ's refusal comes back as an *APIError.
func (a *Adapter) raw(ctx context.Context, p, contentType string, body []byte, out any) error {
	tok, err := a.tokens.Token()
	if err != nil {
		return fmt.Errorf("getting a qq access token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, uploadTimeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, a.opts.APIBase+p, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	r.Header.Set("Content-Type", contentType)
	r.Header.Set("Authorization", tok.TokenType+" "+tok.AccessToken)
	client := &http.Client{Transport: a.opts.HTTPClient.Transport, Timeout: uploadTimeout}
	resp, err := client.Do(r)
	if err != nil {
		return fmt.Errorf("qq API call: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("reading qq's answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return apiErrorOf(resp, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding qq's answer: %w", err)
	}
	return nil
}

// apiErrorOf reads QQ's error answer.
func apiErrorOf(resp *http.Response, b []byte) *APIError {
	ae := &APIError{HTTPStatus: resp.StatusCode, TraceID: resp.Header.Get("X-Tps-trace-ID")}
	var body struct {
		Code    int    `json:"code"`
		ErrCode int    `json:"err_code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &body) == nil {
		ae.Code, ae.Message = body.Code, body.Message
		if ae.Code == 0 {
			ae.Code = body.ErrCode
		}
	} else {
		ae.Message = strings.TrimSpace(string(b))
		if len(ae.Message) > 200 {
			ae.Message = ae.Message[:200] + "…"
		}
	}
	return ae
}

// retry makes call, retrying 5xx, 429 and network errors with backoff and
// a rejected token once after dropping it. bump, when set, takes the next
// msg_seq after QQ says the last was used (by an earlier process); a used
// seq after an uncertain attempt means that attempt arrived. Other
// refusals are returned as they are, marking the end of the message's
// replies where QQ says so.
func (a *Adapter) retry(ctx context.Context, req dispatch.RequestContext, what string, bump func(), call func() error) error {
	refreshed, uncertain, bumps := false, false, 0
	for attempt := 1; ; attempt++ {
		err := call()
		a.count(ctx, what, err)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		var ae *APIError
		isAPI := errors.As(err, &ae)
		switch {
		case isAPI && (ae.HTTPStatus == http.StatusUnauthorized || ae.Code == codeTokenExpired || ae.Code == codeAuthInvalid) && !refreshed:
			a.tokens.invalidate()
			refreshed = true
			continue
		case isAPI && ae.Code == codeDuplicateSeq && bump != nil && uncertain:
			return nil
		case isAPI && ae.Code == codeDuplicateSeq && bump != nil && bumps < maxSeqBumps:
			bumps++
			bump()
			continue
		}
		if isAPI && ae.HTTPStatus < 500 && ae.HTTPStatus != http.StatusTooManyRequests {
			a.log.Error().Str("chatKey", req.ChatKey).Str("msgId", req.MessageID).Int("status", ae.HTTPStatus).
				Int("code", ae.Code).Str("message", ae.Message).Str("traceId", ae.TraceID).Msg(what + " refused")
			return a.closedBy(req.MessageID, ae)
		}
		uncertain = uncertain || !isAPI || ae.HTTPStatus >= 500
		if attempt >= a.opts.MaxAttempts {
			return fmt.Errorf("%s failed after %d attempts: %w", what, attempt, err)
		}
		wait := adapters.Jitter(a.opts.RetryBase << (attempt - 1))
		a.log.Warn().Err(err).Str("chatKey", req.ChatKey).Dur("wait", wait).Msg(what + " failed; retrying")
		if !adapters.SleepCtx(ctx, wait) {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}
