package telegram

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// maxDownload is the Bot API's own limit for getFile.
const maxDownload = 20 << 20

// describeMedia downloads a message's photo, document, voice, audio or
// video into the cache and describes it to the model in one line before
// the text (type, where the file is, the caption). Voice is not
// transcribed yet, and the description says so.
func (a *Adapter) describeMedia(ctx context.Context, m *tgbotapi.Message, text string) string {
	var kind, fileID, name, extra string
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1] // the largest size
		kind, fileID, name = "photo", p.FileID, p.FileUniqueID+".jpg"
		extra = fmt.Sprintf("%dx%d", p.Width, p.Height)
	case m.Voice != nil:
		kind, fileID, name = "voice message", m.Voice.FileID, m.Voice.FileUniqueID+".ogg"
		extra = fmt.Sprintf("%d s, not transcribed", m.Voice.Duration)
	case m.Document != nil:
		kind, fileID, name = "document", m.Document.FileID, m.Document.FileName
		extra = strings.TrimSpace(fmt.Sprintf("%q %s", m.Document.FileName, m.Document.MimeType))
	case m.Audio != nil:
		kind, fileID, name = "audio", m.Audio.FileID, m.Audio.FileName
		extra = fmt.Sprintf("%d s", m.Audio.Duration)
	case m.Video != nil:
		kind, fileID, name = "video", m.Video.FileID, m.Video.FileName
		extra = fmt.Sprintf("%d s", m.Video.Duration)
	case m.Sticker != nil:
		return strings.TrimSpace("[sticker " + m.Sticker.Emoji + "] " + text)
	default:
		return text
	}
	if name == "" {
		name = fileID
	}
	where := "download failed"
	if a.opts.CacheDir != "" {
		dst := filepath.Join(a.opts.CacheDir, "files", strconv.FormatInt(m.Chat.ID, 10),
			strconv.Itoa(m.MessageID)+"-"+safeName(name))
		if _, err := a.api.download(ctx, fileID, dst, maxDownload); err != nil {
			a.log.Warn().Err(err).Str("kind", kind).Msg("telegram file download failed")
		} else {
			where = "saved at " + dst
		}
	}
	desc := fmt.Sprintf("[%s (%s), %s]", kind, extra, where)
	if text == "" {
		return desc
	}
	return desc + "\n" + text
}

// safeName keeps a file name to one harmless path element.
func safeName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		return "file"
	}
	return s
}
