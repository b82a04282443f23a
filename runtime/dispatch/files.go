package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/turn"
)

// Artifact is a file a run sent into its chat (turn.Artifact).
type Artifact = turn.Artifact

// ViaFiles marks the assistant entry of files sent with chat_send_file
// (meta.via); its meta.artifacts lists them.
const ViaFiles = "chat_send_file"

// OutFile is one file to send into a chat. The sender checked it against
// the platform's FileLimits before any was sent.
type OutFile struct {
	// Name is the file's name as the chat shows it ("chart.png").
	Name string
	// Kind is media's kind it goes as: image, video, audio, voice or file.
	Kind  string
	MIME  string
	Bytes int64
	// Open returns the file's bytes from the start. A dispatcher that
	// retries a send opens it again.
	Open func() (io.ReadCloser, error)
}

// FileLimits is what a platform takes in one chat (FileSender).
type FileLimits struct {
	// MaxBytes is the largest file of each kind the platform takes; a kind
	// it has no entry for is not sent as that kind (an image goes as a
	// "file" where only that is taken; where neither is, it is refused).
	MaxBytes map[string]int64
	// MaxFiles is how many files one send may carry (an album); 0 means 1.
	MaxFiles int
	// MaxCaption is the longest caption, in the platform's own count
	// (characters, or UTF-16 units on Telegram); 0: no caption, it is sent
	// as a text of its own before the files.
	MaxCaption int
}

// FileSender is a Dispatcher that can send files into a chat. It is
// optional: a channel without it cannot send files, and chat_send_file
// says so.
type FileSender interface {
	// FileLimits says what the platform takes in req's chat.
	FileLimits(req RequestContext) FileLimits
	// SendFiles sends files, within FileLimits, into req's chat and topic
	// (a reply to req's message where the platform threads replies), with
	// caption (the model's Markdown, rendered like a text reply; "" for
	// none) on the first file or the album. It returns the platform's id of
	// each sent file, in order ("" where it gives none). When some files
	// went and a later one failed, the error is a *PartError.
	SendFiles(ctx context.Context, req RequestContext, files []OutFile, caption string) (ids []string, err error)
}

// ErrNoFiles is returned by DeliverFiles when the channel cannot send
// files.
var ErrNoFiles = errors.New("this channel cannot send files")

// FileLimitsFor returns what the channel of req takes, and false when it
// cannot send files at all.
func (r *Registry) FileLimitsFor(req RequestContext) (FileLimits, bool) {
	d, ok := r.Lookup(req.Channel)
	if !ok {
		return FileLimits{}, false
	}
	fs, ok := d.(FileSender)
	if !ok {
		return FileLimits{}, false
	}
	return fs.FileLimits(req), true
}

// DeliverFiles sends files (each described by its artifact, in the same
// order) with caption into the chat of the request ctx carries, then logs
// one assistant entry naming them (meta.artifacts), tells the run's
// Watcher of each, and returns the artifacts with the platform's file ids.
// Like Deliver, the entry is written only after the platform took them.
func (d *Deliverer) DeliverFiles(ctx context.Context, files []OutFile, arts []Artifact, caption string) ([]Artifact, error) {
	if len(files) != len(arts) {
		return nil, fmt.Errorf("delivering files: %d files but %d artifacts", len(files), len(arts))
	}
	req, ok := RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		noteSend(ctx, ErrNoRequest)
		return nil, ErrNoRequest
	}
	disp, ok := d.Registry.Lookup(req.Channel)
	if !ok {
		err := fmt.Errorf("delivering files to %s: %w", req.Channel, ErrNoDispatcher)
		noteSend(ctx, err)
		return nil, err
	}
	fs, ok := disp.(FileSender)
	if !ok {
		return nil, fmt.Errorf("delivering files to %s: %w", req.Channel, ErrNoFiles)
	}
	if d.BeforeSend != nil {
		if err := d.BeforeSend(ctx); err != nil {
			err = fmt.Errorf("recording the files before sending: %w", err)
			noteSend(ctx, err)
			return nil, err
		}
	}
	if live := LiveFromContext(ctx); live != nil {
		live.replying(ctx)
	}
	ids, err := fs.SendFiles(ctx, req, files, caption)
	noteSend(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("delivering files to %s: %w", req.Channel, err)
	}
	if strings.TrimSpace(caption) != "" {
		noteReplied(ctx, caption)
	}
	out := append([]Artifact(nil), arts...)
	for i := range out {
		if i < len(ids) {
			out[i].FileID = ids[i]
		}
	}
	if w, _ := RunFrom(ctx); w.Watcher != nil {
		for _, a := range out {
			w.Watcher.Artifact(a)
		}
	}
	if d.Store != nil {
		meta := replyMeta(req, ViaFiles)
		meta["artifacts"] = out
		if _, aerr := d.Store.Append(ctx, chat.ChatLogEntryV1{
			Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey,
			Role: chat.RoleAssistant, Text: FilesText(caption, out), Meta: meta,
		}); aerr != nil {
			// The chat has the files; a lost log line must not make the
			// model send them again.
			zerolog.Ctx(ctx).Error().Err(aerr).Str("chatKey", req.ChatKey).Msg("logging sent files")
		}
	}
	return out, nil
}

// FilesText is how the chat log (and so the model's history) shows files
// sent with a caption: the caption, then one line naming the files.
func FilesText(caption string, arts []Artifact) string {
	names := make([]string, len(arts))
	for i, a := range arts {
		names[i] = fmt.Sprintf("%s (%s, %d bytes)", a.Name, a.MIME, a.Bytes)
	}
	line := "[sent " + strings.Join(names, ", ") + "]"
	if strings.TrimSpace(caption) == "" {
		return line
	}
	return caption + "\n" + line
}

// Question is a question with choices a run asked in its chat (the ask
// tool), as the run's Watcher hears of it: the API shows it as a "ui"
// event, the console as buttons.
type Question struct {
	ID      string   `json:"questionId"`
	ChatKey string   `json:"chatKey"`
	Text    string   `json:"question"`
	Choices []string `json:"choices"`
	// Anyone says anyone in the chat may answer, not only the person
	// asked.
	Anyone bool `json:"anyone,omitempty"`
	// Expires is when the question stops taking answers (Unix ms).
	Expires int64 `json:"expiresAt"`
}

// Watcher hears of what a run shows its chat besides text: files and
// questions. The engine puts one in each run (as Run.Watcher) and turns
// what it hears into events and the run's result.
type Watcher interface {
	Artifact(a Artifact)
	Asked(q Question)
	// Replied hears each text the chat got from the run (a reply, a
	// caption, a question as sent), as the chat got it: the run's result
	// lists them, so whoever waits for the run (/api/execute, on any
	// replica) has them without reading the chat log.
	Replied(text string)
}

// noteReplied tells the Watcher of ctx's run, if any, that text reached
// the chat.
func noteReplied(ctx context.Context, text string) {
	if r, _ := RunFrom(ctx); r.Watcher != nil {
		r.Watcher.Replied(text)
	}
}

// NoteAsked tells the Watcher of ctx's run, if any, that q was asked.
func NoteAsked(ctx context.Context, q Question) {
	if r, _ := RunFrom(ctx); r.Watcher != nil {
		r.Watcher.Asked(q)
	}
}

// WithWatcher returns a context whose run reports to w.
func WithWatcher(ctx context.Context, w Watcher) context.Context {
	return with(ctx, func(r *Run) { r.Watcher = w })
}

// FilesURLPrefix is where the HTTP API serves the files under
// .ship/files (GET /api/files/<path under .ship/files>).
const FilesURLPrefix = "/api/files/"

// FileURL is the download URL of a file kept under .ship/files (path
// relative to the project folder), "" for one kept elsewhere.
func FileURL(path string) string {
	rest, ok := strings.CutPrefix(path, ".ship/files/")
	if !ok || rest == "" {
		return ""
	}
	return FilesURLPrefix + rest
}
