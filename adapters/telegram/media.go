package telegram

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// maxDownload is the Bot API's own limit for getFile.
const maxDownload = 20 << 20

// mediaFile is the file a message carries, if any.
func mediaFile(m *tgbotapi.Message) (kind, fileID, name string) {
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1] // the largest size
		return "photo", p.FileID, p.FileUniqueID + ".jpg"
	case m.Voice != nil:
		return "voice message", m.Voice.FileID, m.Voice.FileUniqueID + ".ogg"
	case m.Document != nil:
		return "document", m.Document.FileID, m.Document.FileName
	case m.Audio != nil:
		return "audio", m.Audio.FileID, m.Audio.FileName
	case m.Video != nil:
		return "video", m.Video.FileID, m.Video.FileName
	}
	return "", "", ""
}

// describeMedia describes a message's photo, document, voice, audio or
// video to the model in one line before the text (type, where the file
// is, the caption). where is "saved at …" once downloaded, "" before.
// Voice is not transcribed yet, and the description says so.
func describeMedia(m *tgbotapi.Message, text, where string) string {
	var extra string
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1]
		extra = fmt.Sprintf("%dx%d", p.Width, p.Height)
	case m.Voice != nil:
		extra = fmt.Sprintf("%d s, not transcribed", m.Voice.Duration)
	case m.Document != nil:
		extra = strings.TrimSpace(fmt.Sprintf("%q %s", m.Document.FileName, m.Document.MimeType))
	case m.Audio != nil:
		extra = fmt.Sprintf("%d s", m.Audio.Duration)
	case m.Video != nil:
		extra = fmt.Sprintf("%d s", m.Video.Duration)
	case m.Sticker != nil:
		return strings.TrimSpace("[sticker " + m.Sticker.Emoji + "] " + text)
	default:
		return text
	}
	kind, _, _ := mediaFile(m)
	if where == "" {
		where = "not downloaded"
	}
	desc := fmt.Sprintf("[%s (%s), %s]", kind, extra, where)
	if text == "" {
		return desc
	}
	return desc + "\n" + text
}

// download saves a message's file into the cache and says where; ok is
// false when there is no file or it could not be had (the description
// then says "not downloaded").
func (a *Adapter) download(ctx context.Context, m *tgbotapi.Message) (where string, ok bool) {
	kind, fileID, name := mediaFile(m)
	if fileID == "" || a.opts.CacheDir == "" {
		return "", false
	}
	if name == "" {
		name = fileID
	}
	dir := filepath.Join(a.opts.CacheDir, "files")
	dst := filepath.Join(dir, strconv.FormatInt(m.Chat.ID, 10), strconv.Itoa(m.MessageID)+"-"+safeName(name))
	if _, err := a.api.download(ctx, fileID, dst, maxDownload); err != nil {
		a.log.Warn().Err(err).Str("kind", kind).Msg("telegram file download failed")
		return "download failed", true
	}
	// Walking the cache on every download would put a directory scan in
	// the receive path of every photo: prune at most once per interval.
	now := time.Now()
	if last := a.pruned.Load(); now.UnixNano()-last >= int64(pruneEvery) && a.pruned.CompareAndSwap(last, now.UnixNano()) {
		if err := pruneFiles(dir, maxCacheBytes, maxCacheAge, now); err != nil {
			a.log.Warn().Err(err).Msg("pruning the telegram download cache")
		}
	}
	return "saved at " + dst, true
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
