package telegram

import (
	"context"
	"fmt"
	"io"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters"
)

// attachments lists the files a message carries: its photo (the largest
// size), voice note, document, audio, video or video note, or sticker
// (described only). Telegram puts at most one on a message.
func (a *Adapter) attachments(m *tgbotapi.Message) []adapters.Attachment {
	fetch := func(fileID string) func(context.Context) (io.ReadCloser, error) {
		return func(ctx context.Context) (io.ReadCloser, error) { return a.api.open(ctx, fileID) }
	}
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1]
		return []adapters.Attachment{{Kind: adapters.KindImage, Label: fmt.Sprintf("photo (%dx%d)", p.Width, p.Height),
			Name: p.FileUniqueID + ".jpg", MIME: "image/jpeg", Size: int64(p.FileSize), Fetch: fetch(p.FileID)}}
	case m.Voice != nil:
		v := m.Voice
		return []adapters.Attachment{{Kind: adapters.KindVoice, Label: fmt.Sprintf("voice message (%d s)", v.Duration),
			Name: v.FileUniqueID + ".ogg", MIME: v.MimeType, Size: int64(v.FileSize), Fetch: fetch(v.FileID)}}
	case m.Document != nil:
		d := m.Document
		kind, what := adapters.KindFile, "document"
		switch {
		case strings.HasPrefix(d.MimeType, "image/"):
			kind, what = adapters.KindImage, "image file"
		case strings.HasPrefix(d.MimeType, "audio/"):
			kind, what = adapters.KindAudio, "audio file"
		}
		return []adapters.Attachment{{Kind: kind, Label: strings.TrimSpace(fmt.Sprintf("%s %q %s", what, d.FileName, d.MimeType)),
			Name: nameOr(d.FileName, d.FileUniqueID), MIME: d.MimeType, Size: int64(d.FileSize), Fetch: fetch(d.FileID)}}
	case m.Audio != nil:
		au := m.Audio
		label := fmt.Sprintf("audio (%d s)", au.Duration)
		if au.Title != "" {
			label = fmt.Sprintf("audio %q (%d s)", au.Title, au.Duration)
		}
		return []adapters.Attachment{{Kind: adapters.KindAudio, Label: label,
			Name: nameOr(au.FileName, au.FileUniqueID), MIME: au.MimeType, Size: int64(au.FileSize), Fetch: fetch(au.FileID)}}
	case m.Video != nil:
		v := m.Video
		return []adapters.Attachment{{Kind: adapters.KindVideo, Label: fmt.Sprintf("video (%d s)", v.Duration),
			Name: nameOr(v.FileName, v.FileUniqueID+".mp4"), MIME: v.MimeType, Size: int64(v.FileSize), Fetch: fetch(v.FileID)}}
	case m.VideoNote != nil:
		v := m.VideoNote
		return []adapters.Attachment{{Kind: adapters.KindVideo, Label: fmt.Sprintf("video note (%d s)", v.Duration),
			Name: v.FileUniqueID + ".mp4", MIME: "video/mp4", Size: int64(v.FileSize), Fetch: fetch(v.FileID)}}
	case m.Sticker != nil:
		return []adapters.Attachment{{Kind: adapters.KindImage, Label: strings.TrimSpace("sticker " + m.Sticker.Emoji)}}
	}
	return nil
}

func nameOr(name, fallback string) string {
	if name != "" {
		return name
	}
	return fallback
}
