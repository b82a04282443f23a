package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Feishu's upload limits: an image ≤ 10 MB
// (https://open.feishu.cn/document/server-docs/im-v1/image/create, 使用限制)
// and any other file ≤ 30 MB
// (https://open.feishu.cn/document/server-docs/im-v1/file/create, 使用限制);
// neither takes an empty file.
const (
	MaxImageBytes = 10 << 20
	MaxFileBytes  = 30 << 20
)

// maxFilesPerSend bounds one SendFiles: Feishu has no albums, each file is
// a message of its own, and ten in a row is already a flood.
const maxFilesPerSend = 10

// kindFile keeps the uuids of file messages apart from replies.
const kindFile = "file"

// imageMIMEs are the image formats the image upload takes (JPG, JPEG, PNG,
// WEBP, GIF, BMP, ICO, TIFF, HEIC: the upload page's first paragraph). An
// image of another format (SVG, say) goes as a file.
var imageMIMEs = map[string]bool{
	"image/jpeg": true, "image/jpg": true, "image/png": true, "image/webp": true, "image/gif": true,
	"image/bmp": true, "image/x-icon": true, "image/vnd.microsoft.icon": true,
	"image/tiff": true, "image/heic": true,
}

var _ dispatch.FileSender = (*Adapter)(nil)

// FileLimits says what a Feishu chat takes: images up to 10 MB, videos,
// audio and other files up to 30 MB, each its own message, and no caption
// on them (image and file messages carry none: it goes before them as a
// reply of its own).
func (a *Adapter) FileLimits(dispatch.RequestContext) dispatch.FileLimits {
	return dispatch.FileLimits{
		MaxBytes: map[string]int64{
			"image": MaxImageBytes, "video": MaxFileBytes, "audio": MaxFileBytes,
			"voice": MaxFileBytes, "file": MaxFileBytes,
		},
		MaxFiles: maxFilesPerSend,
	}
}

// upload is how one file goes: which upload, and which message then.
type upload struct {
	image    bool   // the image upload, then an image message
	fileType string // the file upload's file_type
	msgType  string // file, media (mp4) or audio (opus)
	limit    int64
}

// uploadFor picks the upload and message of f: images Feishu takes as
// images, mp4 videos as media, Opus audio as audio, everything else as a
// file message (file_type pdf, doc, xls, ppt or stream).
func uploadFor(f dispatch.OutFile) upload {
	mime := strings.ToLower(strings.TrimSpace(strings.Split(f.MIME, ";")[0]))
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(f.Name), "."))
	switch {
	case f.Kind == "image" && imageMIMEs[mime]:
		return upload{image: true, limit: MaxImageBytes}
	case (f.Kind == "video" || f.Kind == "file") && (mime == "video/mp4" || ext == "mp4"):
		return upload{fileType: "mp4", msgType: "media", limit: MaxFileBytes}
	case f.Kind == "voice" && (mime == "audio/ogg" || mime == "audio/opus" || ext == "ogg" || ext == "oga" || ext == "opus"),
		f.Kind == "audio" && (mime == "audio/opus" || ext == "opus"):
		// A voice note is Ogg/Opus (chat_send_file sends only those as
		// voice); other Ogg audio may be Vorbis, which Feishu's audio
		// message does not play: it goes as a file.
		return upload{fileType: "opus", msgType: "audio", limit: MaxFileBytes}
	}
	ft := "stream"
	switch ext {
	case "pdf":
		ft = "pdf"
	case "doc", "docx":
		ft = "doc"
	case "xls", "xlsx":
		ft = "xls"
	case "ppt", "pptx":
		ft = "ppt"
	}
	return upload{fileType: ft, msgType: "file", limit: MaxFileBytes}
}

// SendFiles sends files into req's chat, each uploaded and then sent as
// its own message (a reply, threaded, where a text reply would be one),
// after the caption, rendered like a reply, when there is one. Everything
// is checked before anything is sent: a file over Feishu's limit, or
// empty, fails the whole send with nothing sent. It returns each file's
// image_key or file_key.
func (a *Adapter) SendFiles(ctx context.Context, req dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	if req.ChatID == "" {
		return nil, errors.New("feishu: no chat to send files to")
	}
	if len(files) == 0 {
		return nil, errors.New("feishu: no files to send")
	}
	if len(files) > maxFilesPerSend {
		return nil, fmt.Errorf("feishu: %d files in one send, at most %d", len(files), maxFilesPerSend)
	}
	ups := make([]upload, len(files))
	for i, f := range files {
		ups[i] = uploadFor(f)
		switch {
		case f.Open == nil:
			return nil, fmt.Errorf("feishu: %s cannot be read", f.Name)
		case f.Bytes <= 0:
			return nil, fmt.Errorf("feishu: %s is empty, and Feishu takes no empty files", f.Name)
		case f.Bytes > ups[i].limit:
			what := "a file"
			if ups[i].image {
				what = "an image"
			}
			return nil, fmt.Errorf("feishu: %s is %s of %.1f MB, over Feishu's %d MB for %s",
				f.Name, what, float64(f.Bytes)/(1<<20), ups[i].limit>>20, what)
		}
	}
	parts, done := len(files), 0
	if strings.TrimSpace(caption) != "" {
		parts++
		if _, err := a.sendCards(ctx, req, caption, kindReply); err != nil {
			return nil, fmt.Errorf("sending the caption: %w", err)
		}
		done++
	}
	n := a.uuids.next(kindFile, req.MessageID)
	ids := make([]string, 0, len(files))
	for i, f := range files {
		key, err := a.sendFile(ctx, req, f, ups[i], uuidFor(kindFile, req.MessageID, n, i))
		if err != nil {
			err = fmt.Errorf("sending %s: %w", f.Name, err)
			if done > 0 {
				return ids, &dispatch.PartError{Part: done + 1, Parts: parts, Err: err}
			}
			return ids, err
		}
		ids = append(ids, key)
		done++
	}
	return ids, nil
}

// sendFile uploads f and sends the message that shows it.
func (a *Adapter) sendFile(ctx context.Context, req dispatch.RequestContext, f dispatch.OutFile, up upload, uuid string) (string, error) {
	var key, msgType, content string
	if up.image {
		k, err := a.uploadImage(ctx, f)
		if err != nil {
			return "", err
		}
		key, msgType = k, larkim.MsgTypeImage
		b, _ := json.Marshal(map[string]string{"image_key": k})
		content = string(b)
	} else {
		k, err := a.uploadFile(ctx, f, up)
		if err != nil {
			return "", err
		}
		key, msgType = k, up.msgType
		b, _ := json.Marshal(map[string]string{"file_key": k})
		content = string(b)
	}
	if _, err := a.sendMessage(ctx, req, msgType, content, uuid); err != nil {
		return "", err
	}
	return key, nil
}

// uploadImage uploads f with the image upload (image_type message) and
// returns its image_key.
func (a *Adapter) uploadImage(ctx context.Context, f dispatch.OutFile) (string, error) {
	var key string
	_, err := a.call(ctx, "image upload", retryAll, func(ctx context.Context) (apiResult, error) {
		b, err := adapters.ReadOutFile(f, MaxImageBytes)
		if err != nil {
			return apiResult{}, &readError{err}
		}
		resp, err := a.cli.Im.V1.Image.Create(ctx, larkim.NewCreateImageReqBuilder().
			Body(larkim.NewCreateImageReqBodyBuilder().ImageType(larkim.CreateImageImageTypeMessage).Image(bytes.NewReader(b)).Build()).
			Build())
		if err != nil {
			return apiResult{}, err
		}
		if resp.Data != nil && resp.Data.ImageKey != nil {
			key = *resp.Data.ImageKey
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// uploadFile uploads f with the file upload and returns its file_key.
func (a *Adapter) uploadFile(ctx context.Context, f dispatch.OutFile, up upload) (string, error) {
	var key string
	_, err := a.call(ctx, "file upload", retryAll, func(ctx context.Context) (apiResult, error) {
		b, err := adapters.ReadOutFile(f, up.limit)
		if err != nil {
			return apiResult{}, &readError{err}
		}
		resp, err := a.cli.Im.V1.File.Create(ctx, larkim.NewCreateFileReqBuilder().
			Body(larkim.NewCreateFileReqBodyBuilder().FileType(up.fileType).FileName(f.Name).File(bytes.NewReader(b)).Build()).
			Build())
		if err != nil {
			return apiResult{}, err
		}
		if resp.Data != nil && resp.Data.FileKey != nil {
			key = *resp.Data.FileKey
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// readError is a local file that could not be read: final, not retried.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }
