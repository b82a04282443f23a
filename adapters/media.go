package adapters

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/stt"
)

// Kinds of attachments (media.Kind*, so platforms need not know the file
// store).
const (
	KindImage = media.KindImage
	KindVoice = media.KindVoice
	KindAudio = media.KindAudio
	KindVideo = media.KindVideo
	KindFile  = media.KindFile
)

// Attachment is one file a platform message carries, before it is fetched.
type Attachment struct {
	// Kind is one of the Kind constants.
	Kind string
	// Label names it in the text the model sees: "photo (640x480)",
	// "voice message (4 s)".
	Label string
	// Name is the file name to keep it under; its extension tells the
	// transcription endpoint the audio format.
	Name string
	// MIME and Size are what the platform says ("" and 0: unknown). A file
	// the platform says is over the cap is not fetched at all.
	MIME string
	Size int64
	// Fetch opens the file's bytes; nil means it cannot be downloaded
	// (a sticker, an attachment without a URL): it is only described.
	Fetch func(ctx context.Context) (io.ReadCloser, error)
}

// Media fetches, stores and transcribes what platform messages carry. Every
// platform's Prepare ends here, so the three describe files alike. A nil
// *Media describes attachments without fetching them.
type Media struct {
	Files *media.Store
	// STT transcribes voice notes and audio; nil: they are described as
	// not transcribed.
	STT *stt.Client
	Log zerolog.Logger
}

// MediaFromConfig is the Media of a configured ship: files under
// .ship/files, speech to text when the stt section is set.
func MediaFromConfig(cfg config.Config, log zerolog.Logger) (*Media, error) {
	tr, err := cfg.Transcriber()
	if err != nil {
		return nil, err
	}
	return &Media{Files: cfg.FileStore(), STT: tr, Log: log}, nil
}

// Describe is the text of a message before its attachments are fetched
// (a message that is only logged, or the first look at one): each
// attachment named on a line of its own, then the text.
func Describe(atts []Attachment, text string) string {
	lines := make([]string, 0, len(atts)+1)
	for _, a := range atts {
		lines = append(lines, "["+a.Label+"]")
	}
	return joinLines(append(lines, text))
}

// Prepare fetches a message's attachments into the file store and returns
// what the model sees and the log keeps: each file described with where
// it is saved, a voice note's transcript as the text itself. Nothing is
// dropped: a file that is too large, fails to download or cannot be
// transcribed is described as such.
func (m *Media) Prepare(ctx context.Context, chatKey, messageID, text string, atts []Attachment) ingress.Prepared {
	if m == nil || m.Files == nil || len(atts) == 0 {
		return ingress.Prepared{Text: Describe(atts, text)}
	}
	var out ingress.Prepared
	var lines, transcripts []string
	sttFailed := ""
	for _, a := range atts {
		f, desc, ok := m.fetch(ctx, chatKey, messageID, a)
		if ok {
			out.Files = append(out.Files, f)
		}
		if ok && (a.Kind == media.KindVoice || a.Kind == media.KindAudio) {
			t, err := m.transcribe(ctx, f)
			switch {
			case err == nil && t != "":
				transcripts = append(transcripts, t)
				continue
			case err == nil:
				desc += "; transcribed, but no speech was recognized"
			case errors.Is(err, errNoSTT):
				desc += "; not transcribed: speech to text is not set up"
			default:
				m.Log.Warn().Err(err).Str("chatKey", chatKey).Str("messageId", messageID).Msg("transcribing a voice message failed")
				sttFailed = strings.TrimPrefix(err.Error(), "transcribing: ")
				desc += "; transcription failed: " + sttFailed
			}
		}
		lines = append(lines, "["+desc+"]")
	}
	out.Transcript = len(transcripts) > 0
	out.Text = joinLines(append(append(lines, transcripts...), text))
	if sttFailed != "" && len(atts) == 1 && strings.TrimSpace(text) == "" {
		// Nothing else to answer: the model would only guess at an empty
		// message. Say plainly what happened instead.
		out.Answer = "Sorry, I could not transcribe your voice message (" + sttFailed + "). Please try again, or type it."
	}
	return out
}

// fetch stores one attachment and describes it; ok says it was stored.
func (m *Media) fetch(ctx context.Context, chatKey, messageID string, a Attachment) (media.File, string, bool) {
	limit := m.Files.MaxBytes()
	switch {
	case a.Fetch == nil:
		return media.File{}, a.Label, false
	case a.Size > limit:
		return media.File{}, fmt.Sprintf("%s, %s: not downloaded, over the %s limit", a.Label, media.Size(a.Size), media.Size(limit)), false
	}
	rc, err := a.Fetch(ctx)
	if err == nil {
		var f media.File
		f, err = m.Files.Save(ctx, chatKey, messageID, a.Kind, a.Name, a.MIME, rc)
		_ = rc.Close()
		if err == nil {
			return f, fmt.Sprintf("%s, %s, saved at %s", a.Label, media.Size(f.Bytes), f.Path), true
		}
	}
	if errors.Is(err, media.ErrTooLarge) {
		return media.File{}, fmt.Sprintf("%s: not downloaded, over the %s limit", a.Label, media.Size(limit)), false
	}
	m.Log.Warn().Err(err).Str("chatKey", chatKey).Str("messageId", messageID).Str("kind", a.Kind).Msg("downloading an attachment failed")
	return media.File{}, a.Label + ": download failed", false
}

var errNoSTT = errors.New("speech to text is not configured")

// transcribe sends a stored audio file to the endpoint, under a name whose
// extension the endpoint takes (it tells formats by name).
func (m *Media) transcribe(ctx context.Context, f media.File) (string, error) {
	if m.STT == nil {
		return "", errNoSTT
	}
	b, err := m.Files.Read(ctx, f, stt.MaxBytes)
	if err != nil {
		return "", err
	}
	return m.STT.Transcribe(ctx, uploadName(f), b)
}

// sttFormats are the extensions OpenAI's endpoint takes.
var sttFormats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// uploadName keeps the stored name when its extension is one the endpoint
// takes, and otherwise names the container the bytes are in: Feishu's
// ".opus" voice is Ogg/Opus, which the endpoint takes as ".ogg" with no
// conversion.
func uploadName(f media.File) string {
	base := media.SafeName(f.Name)
	if f.Name == "" {
		base = path.Base(f.Path)
	}
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(base)), ".")
	if slices.Contains(sttFormats, ext) {
		return base
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	switch f.MIME {
	case "audio/ogg", "application/ogg", "audio/opus":
		return stem + ".ogg"
	case "audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave":
		return stem + ".wav"
	case "audio/mpeg", "audio/mp3":
		return stem + ".mp3"
	case "audio/mp4", "audio/x-m4a", "audio/m4a":
		return stem + ".m4a"
	case "audio/webm", "video/webm":
		return stem + ".webm"
	case "audio/flac", "audio/x-flac":
		return stem + ".flac"
	}
	return base
}

func joinLines(parts []string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n")
}
