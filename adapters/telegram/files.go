package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // photos measured before sending
	_ "image/png"  // photos measured before sending
	"io"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// Telegram's limits on the files a bot sends (https://core.telegram.org/bots/api).
const (
	// MaxPhotoBytes: #sendphoto, "The photo must be at most 10 MB in size."
	MaxPhotoBytes = 10 << 20
	// MaxUploadBytes: #senddocument, "Bots can currently send files of any
	// type of up to 50 MB in size"; videos, audio and voice notes alike.
	MaxUploadBytes = 50 << 20
	// MaxCaption: a caption is "0-1024 characters after entities parsing".
	// Counted in UTF-16 code units here, which is never fewer.
	MaxCaption = 1024
	// MaxAlbum: sendMediaGroup's media "must include 2-10 items".
	MaxAlbum = 10
	// #sendphoto: "The photo's width and height must not exceed 10000 in
	// total. Width and height ratio must be at most 20."
	maxPhotoSides = 10000
	maxPhotoRatio = 20
)

// The adapter sends files.
var _ dispatch.FileSender = (*Adapter)(nil)

// FileLimits says what Telegram takes from a bot in any chat: photos up to
// 10 MB, other files up to 50 MB, albums of up to 10, captions up to 1,024.
func (a *Adapter) FileLimits(dispatch.RequestContext) dispatch.FileLimits {
	return dispatch.FileLimits{
		MaxBytes: map[string]int64{
			"image": MaxPhotoBytes, "video": MaxUploadBytes, "audio": MaxUploadBytes,
			"voice": MaxUploadBytes, "file": MaxUploadBytes,
		},
		MaxFiles:   MaxAlbum,
		MaxCaption: MaxCaption,
	}
}

// outMedia is how one file goes: its Bot API method, file parameter
// (also its InputMedia type) and album class.
type outMedia struct {
	method, field string
	// album: files of one class may share an album (photos with videos;
	// documents and audio only with their own kind); "" goes alone.
	album string
}

var (
	asPhoto    = outMedia{"sendPhoto", "photo", "visual"}
	asVideo    = outMedia{"sendVideo", "video", "visual"}
	asAudio    = outMedia{"sendAudio", "audio", "audio"}
	asVoice    = outMedia{"sendVoice", "voice", ""} // sendMediaGroup has no InputMedia for voice
	asDocument = outMedia{"sendDocument", "document", "document"}
)

// SendFiles sends files into req's chat and topic (a reply to req's
// message in groups), through the same paced and retried path as
// SendText: one file with its own method (sendPhoto, sendVideo, sendAudio,
// sendVoice, sendDocument), several as albums (sendMediaGroup; photos and
// videos together, documents and audio each with their own kind, voice
// notes alone, ten to an album). The caption, rendered from Markdown like a
// reply, goes on the first file; one too long for a caption goes as a text
// message of its own before the files. Files over Telegram's limits are
// refused before anything is sent. It returns the file_id of each file
// (the largest size of a photo).
func (a *Adapter) SendFiles(ctx context.Context, req dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	if len(files) == 0 {
		return nil, errors.New("telegram: sending files: no files")
	}
	chatID, threadID, replyTo, err := replyTarget(req)
	if err != nil {
		return nil, err
	}
	how := make([]outMedia, len(files))
	for i, f := range files {
		if how[i], err = a.mediaOf(f); err != nil {
			return nil, fmt.Errorf("telegram: sending %q: %w", f.Name, err)
		}
	}
	group := req.ChatType == "group" || req.ChatType == "supergroup"
	first, textFirst := a.sender.caption(caption)
	batches := albums(how)
	total := len(batches) + len(textFirst)
	for i, part := range textFirst {
		if _, err := a.sender.sendID(ctx, chatID, threadID, replyTo, group, part, ""); err != nil {
			if i > 0 {
				return nil, &dispatch.PartError{Part: i + 1, Parts: total, Err: err}
			}
			return nil, fmt.Errorf("sending the caption: %w", err)
		}
	}
	ids := make([]string, 0, len(files))
	for i, b := range batches {
		c := first
		if i > 0 {
			c = captionPart{}
		}
		got, err := a.sender.sendMedia(ctx, chatID, threadID, replyTo, group, b, files, how, c)
		if err != nil {
			if done := len(textFirst) + i; done > 0 {
				return ids, &dispatch.PartError{Part: done + 1, Parts: total, Err: err}
			}
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

// mediaOf checks f against Telegram's limits and picks how it goes. An
// image goes as a photo when it is a PNG or JPEG within the photo rules;
// another image (a GIF would lose its motion, an SVG is no photo) or one
// of a shape Telegram refuses as a photo goes as a document.
func (a *Adapter) mediaOf(f dispatch.OutFile) (outMedia, error) {
	if f.Open == nil {
		return outMedia{}, errors.New("nothing to read")
	}
	limit := int64(MaxUploadBytes)
	var m outMedia
	switch f.Kind {
	case "image":
		limit, m = MaxPhotoBytes, asPhoto
	case "video":
		m = asVideo
	case "audio":
		m = asAudio
	case "voice":
		m = asVoice
	case "file":
		m = asDocument
	default:
		return outMedia{}, fmt.Errorf("telegram: cannot send a file of kind %q", f.Kind)
	}
	if f.Bytes > limit {
		return outMedia{}, fmt.Errorf("%d bytes is over Telegram's limit of %d MB for %s files", f.Bytes, limit>>20, f.Kind)
	}
	if m == asPhoto && !a.photoShape(f) {
		m = asDocument
	}
	return m, nil
}

// photoShape reports whether f is a PNG or JPEG Telegram takes as a photo
// (width + height ≤ 10000, ratio ≤ 20).
func (a *Adapter) photoShape(f dispatch.OutFile) bool {
	rc, err := f.Open()
	if err != nil {
		return false // the send reopens it and reports the error
	}
	defer rc.Close()
	cfg, format, err := image.DecodeConfig(rc)
	if err != nil || (format != "png" && format != "jpeg") || cfg.Width <= 0 || cfg.Height <= 0 {
		return false
	}
	long, short := max(cfg.Width, cfg.Height), min(cfg.Width, cfg.Height)
	if cfg.Width+cfg.Height > maxPhotoSides || long > maxPhotoRatio*short {
		a.log.Info().Str("file", f.Name).Int("width", cfg.Width).Int("height", cfg.Height).
			Msg("image too large or too narrow for a telegram photo; sending it as a document")
		return false
	}
	return true
}

// albums groups files, in order, into sends: runs of one album class, up
// to MaxAlbum each. A send of one file uses the file's own method.
func albums(how []outMedia) [][]int {
	var out [][]int
	for i, m := range how {
		if n := len(out); n > 0 && m.album != "" && len(out[n-1]) < MaxAlbum && how[out[n-1][0]].album == m.album {
			out[n-1] = append(out[n-1], i)
			continue
		}
		out = append(out, []int{i})
	}
	return out
}

// captionPart is a rendered caption: text with its entities (JSON) or its
// parse_mode.
type captionPart struct {
	text, entities, parseMode string
}

// caption renders the model's Markdown caption like a reply (entities,
// or the configured parse_mode as written). A caption over MaxCaption is
// returned as text messages to send before the files instead.
func (s *sender) caption(md string) (captionPart, []markdown.Part) {
	if strings.TrimSpace(md) == "" {
		return captionPart{}, nil
	}
	if s.parseMode == "" {
		plain, ents := markdown.Telegram(md)
		if plain != "" && utf16Len(plain) <= MaxCaption {
			return captionPart{text: plain, entities: entitiesJSON(ents)}, nil
		}
	} else if utf16Len(md) <= MaxCaption {
		return captionPart{text: md, parseMode: s.parseMode}, nil
	}
	return captionPart{}, s.parts(md, false)
}

// utf16Len counts s in UTF-16 code units, as Telegram counts text.
func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		n++
		if c >= 0x10000 {
			n++
		}
	}
	return n
}

// sendMedia sends files[idx] (one file, or an album), with c on the first.
func (s *sender) sendMedia(ctx context.Context, chatID, threadID, replyTo int64, group bool, idx []int,
	files []dispatch.OutFile, how []outMedia, c captionPart) ([]string, error) {
	var opened []io.Closer
	closeAll := func() {
		for _, o := range opened {
			_ = o.Close()
		}
		opened = nil
	}
	defer closeAll()
	open := func(name string, f dispatch.OutFile) (tgbotapi.RequestFile, error) {
		rc, err := f.Open()
		if err != nil {
			return tgbotapi.RequestFile{}, fmt.Errorf("opening %q: %w", f.Name, err)
		}
		opened = append(opened, rc)
		return tgbotapi.RequestFile{Name: name, Data: tgbotapi.FileReader{Name: f.Name, Reader: rc}}, nil
	}
	formatted := c.entities != "" || c.parseMode != ""
	if len(idx) == 1 {
		f, m := files[idx[0]], how[idx[0]]
		res, err := s.post(ctx, chatID, threadID, group, call{method: m.method, what: "the file", messages: 1, formatted: formatted,
			build: func(chatID, threadID int64, plain bool) (tgbotapi.Params, []tgbotapi.RequestFile, error) {
				closeAll() // an earlier attempt's
				p := messageParams(chatID, threadID, replyTo, "")
				delete(p, "text")
				if c.text != "" {
					p["caption"] = c.text
					switch {
					case plain:
					case c.entities != "":
						p["caption_entities"] = c.entities
					case c.parseMode != "":
						p["parse_mode"] = c.parseMode
					}
				}
				rf, err := open(m.field, f)
				if err != nil {
					return nil, nil, err
				}
				return p, []tgbotapi.RequestFile{rf}, nil
			}})
		if err != nil {
			return nil, err
		}
		return []string{sentFileID(res)}, nil
	}
	res, err := s.post(ctx, chatID, threadID, group, call{method: "sendMediaGroup", what: "the files", messages: len(idx), formatted: formatted,
		build: func(chatID, threadID int64, plain bool) (tgbotapi.Params, []tgbotapi.RequestFile, error) {
			closeAll()
			p := messageParams(chatID, threadID, replyTo, "")
			delete(p, "text")
			type item struct {
				Type            string          `json:"type"`
				Media           string          `json:"media"`
				Caption         string          `json:"caption,omitempty"`
				ParseMode       string          `json:"parse_mode,omitempty"`
				CaptionEntities json.RawMessage `json:"caption_entities,omitempty"`
			}
			items := make([]item, 0, len(idx))
			rfs := make([]tgbotapi.RequestFile, 0, len(idx))
			for n, i := range idx {
				// https://core.telegram.org/bots/api#sending-files: uploads
				// in an album are named by "attach://<file_attach_name>".
				name := "file" + strconv.Itoa(n)
				it := item{Type: how[i].field, Media: "attach://" + name}
				if n == 0 && c.text != "" {
					it.Caption = c.text
					switch {
					case plain:
					case c.entities != "":
						it.CaptionEntities = json.RawMessage(c.entities)
					case c.parseMode != "":
						it.ParseMode = c.parseMode
					}
				}
				items = append(items, it)
				rf, err := open(name, files[i])
				if err != nil {
					return nil, nil, err
				}
				rfs = append(rfs, rf)
			}
			raw, err := json.Marshal(items)
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the album: %w", err)
			}
			p["media"] = string(raw)
			return p, rfs, nil
		}})
	if err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(res, &msgs); err != nil {
		return nil, fmt.Errorf("telegram sendMediaGroup: reading the sent messages: %w", err)
	}
	ids := make([]string, len(idx))
	for i := range ids {
		if i < len(msgs) {
			ids[i] = sentFileID(msgs[i])
		}
	}
	return ids, nil
}

// sentFileID reads the file_id of the file a sent Message carries: the
// largest size of a photo, else its video, audio, voice note, animation or
// document ("" when it has none).
func sentFileID(res json.RawMessage) string {
	type file struct {
		FileID string `json:"file_id"`
	}
	var m struct {
		Photo []struct {
			FileID        string `json:"file_id"`
			Width, Height int
		} `json:"photo"`
		Video, Audio, Voice, Animation, Document *file
	}
	if json.Unmarshal(res, &m) != nil {
		return ""
	}
	if len(m.Photo) > 0 {
		best := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.Width*p.Height >= best.Width*best.Height {
				best = p
			}
		}
		return best.FileID
	}
	for _, f := range []*file{m.Video, m.Audio, m.Voice, m.Animation, m.Document} {
		if f != nil {
			return f.FileID
		}
	}
	return ""
}
