package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/media"
)

// ChatSendFileName is the tool's name; a policy rule may narrow it by
// path ("chat_send_file(reports/*)").
const ChatSendFileName = "chat_send_file"

// maxSendFiles bounds one call: an album holds at most 10 on every
// platform that has albums.
const maxSendFiles = 10

// MaxKeptFileBytes caps the copy ship keeps of a file it sends: the
// largest any platform takes (Telegram's 50 MB upload).
const MaxKeptFileBytes = 50 << 20

// ChatSendFile is the chat_send_file tool: it sends files of the project
// (a chart a command drew, a log it collected) into the current chat, as
// photos, videos or documents as the platform takes them.
//
// What it may send is narrow on purpose, since a chat member may ask the
// model for anything: files inside the project folder only, never through
// a symlink that leads out of it, never ship's own files (ship.json, .env,
// .ship), except the files of this chat under .ship/files; and each within
// the platform's size limit for its kind, all checked before anything is
// sent, so a refused call sends nothing. What is sent is first copied
// under .ship/files, so a download (/api/files) gets what the chat got.
type ChatSendFile struct {
	Deliverer *dispatch.Deliverer
	// Dir is the project folder.
	Dir string
	// Keep stores the copies (the media store of .ship/files, with a cap
	// of MaxKeptFileBytes).
	Keep *media.Store
	// Private are the names in Dir that hold ship's secrets and state
	// (config.PrivateNames).
	Private []string
}

type sendFileArgs struct {
	Path    string   `json:"path"`
	Paths   []string `json:"paths"`
	Caption string   `json:"caption"`
}

func (a sendFileArgs) all() []string {
	ps := append([]string(nil), a.Paths...)
	if strings.TrimSpace(a.Path) != "" {
		ps = append([]string{a.Path}, ps...)
	}
	return ps
}

// Definition describes chat_send_file to the model.
func (t *ChatSendFile) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: ChatSendFileName,
		Description: "Send files from the project folder (a chart, an image, a log, a report) to the user in the current chat, " +
			"with an optional caption. Images go as photos, several files as one album where the platform allows. " +
			"Paths are relative to the project folder; files of ship itself cannot be sent.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"paths": map[string]any{
					"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1, "maxItems": maxSendFiles,
					"description": "Files to send, relative to the project folder.",
				},
				"caption": map[string]any{"type": "string", "description": "Text shown with the files (Markdown), optional."},
			},
			"required": []string{"paths"},
		},
	}
}

// CommandLine is what the tool policy judges: the paths, each as one
// "command" of its own, so that a rule's pattern must allow every one.
func (t *ChatSendFile) CommandLine(args json.RawMessage) (string, error) {
	var in sendFileArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return "", err
	}
	quoted := make([]string, 0, len(in.all()))
	for _, p := range in.all() {
		quoted = append(quoted, shellQuote(path.Clean(filepath.ToSlash(strings.TrimSpace(p)))))
	}
	return strings.Join(quoted, " ; "), nil
}

// shellQuote quotes p for the policy's command reader when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// Call checks every file, keeps a copy of each and sends them.
func (t *ChatSendFile) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in sendFileArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return failure("arguments must be an object with paths (an array of strings) and an optional caption")
	}
	paths := in.all()
	switch {
	case len(paths) == 0:
		return failure("paths is empty: name at least one file")
	case len(paths) > maxSendFiles:
		return failure(fmt.Sprintf("at most %d files per call, not %d", maxSendFiles, len(paths)))
	case !utf8.ValidString(in.Caption):
		return failure("caption is not valid UTF-8")
	}
	req, ok := dispatch.RequestFromContext(ctx)
	if !ok || req.Channel == "" {
		return failure("there is no chat to send to in this request")
	}
	limits, ok := t.Deliverer.Registry.FileLimitsFor(req)
	if !ok {
		return failure(fmt.Sprintf("%s cannot send files; describe the file in a message instead", req.Channel))
	}
	chosen := make([]picked, 0, len(paths))
	for _, p := range paths {
		f, err := t.pick(req, p, limits)
		if err != nil {
			return failure(err.Error() + "; nothing was sent")
		}
		chosen = append(chosen, f)
	}
	outs, arts, err := t.keep(ctx, req, chosen)
	if err != nil {
		return failure(err.Error() + "; nothing was sent")
	}
	caption := strings.TrimSpace(in.Caption)
	if caption != "" && limits.MaxCaption > 0 && captionLen(caption) > limits.MaxCaption {
		// Too long to go under the files: it goes first, as a message.
		if err := t.Deliverer.Deliver(ctx, caption, dispatch.ViaChatSend); err != nil {
			return failure("the caption could not be sent, so no file was: " + err.Error())
		}
		caption = ""
	} else if caption != "" && limits.MaxCaption == 0 {
		if err := t.Deliverer.Deliver(ctx, caption, dispatch.ViaChatSend); err != nil {
			return failure("the caption could not be sent, so no file was: " + err.Error())
		}
		caption = ""
	}
	per := max(limits.MaxFiles, 1)
	var sent []dispatch.Artifact
	for i := 0; i < len(outs); i += per {
		j := min(i+per, len(outs))
		got, err := t.Deliverer.DeliverFiles(ctx, outs[i:j], arts[i:j], caption)
		if err != nil {
			msg := "delivery failed: " + err.Error()
			if len(sent) > 0 {
				msg = fmt.Sprintf("%d of %d files were sent, then %s", len(sent), len(outs), msg)
			}
			return failure(msg)
		}
		sent = append(sent, got...)
		caption = ""
	}
	list := make([]map[string]any, len(sent))
	for i, a := range sent {
		list[i] = map[string]any{"name": a.Name, "kind": a.Kind, "mime": a.MIME, "bytes": a.Bytes}
	}
	res := result(true, map[string]any{"sent": list})
	res.Delivered = true
	return res
}

// picked is a file checked for sending.
type picked struct {
	rel   string // real path, relative to Dir, slashes
	name  string
	kind  string
	mime  string
	bytes int64
}

// pick checks one path against the rules and the platform's limits.
func (t *ChatSendFile) pick(req dispatch.RequestContext, p string, limits dispatch.FileLimits) (picked, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return picked{}, errors.New("a path is empty")
	}
	rel, err := t.inside(p)
	if err != nil {
		return picked{}, err
	}
	if err := t.allowed(req, rel); err != nil {
		return picked{}, err
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return picked{}, fmt.Errorf("opening the project folder: %w", err)
	}
	defer root.Close()
	fh, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return picked{}, fmt.Errorf("%s: %w", p, cleanErr(err))
	}
	defer fh.Close()
	fi, err := fh.Stat()
	switch {
	case err != nil:
		return picked{}, fmt.Errorf("%s: %w", p, cleanErr(err))
	case !fi.Mode().IsRegular():
		return picked{}, fmt.Errorf("%s is not a regular file", p)
	case fi.Size() == 0:
		return picked{}, fmt.Errorf("%s is empty", p)
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(fh, head)
	typ := mimeOf(path.Base(rel), head[:n])
	var kind string
	var limit int64
	ok := false
	for _, k := range kindsOf(typ, path.Ext(rel)) {
		if limit, ok = limits.MaxBytes[k]; ok {
			kind = k // the first kind the platform takes: a voice note as audio, an image as a document
			break
		}
	}
	if !ok {
		return picked{}, fmt.Errorf("%s is %s, and %s does not take such files here", p, typ, req.Channel)
	}
	if fi.Size() > limit {
		return picked{}, fmt.Errorf("%s is %s, over %s's limit of %s for %s files", p, media.Size(fi.Size()), req.Channel, media.Size(limit), kindWord(kind))
	}
	if fi.Size() > MaxKeptFileBytes {
		return picked{}, fmt.Errorf("%s is %s, over ship's limit of %s per file", p, media.Size(fi.Size()), media.Size(MaxKeptFileBytes))
	}
	return picked{rel: rel, name: path.Base(rel), kind: kind, mime: typ, bytes: fi.Size()}, nil
}

// inside resolves p (relative to Dir, or absolute) with its symlinks and
// returns it relative to Dir, or says why it is outside.
func (t *ChatSendFile) inside(p string) (string, error) {
	dir, err := filepath.EvalSymlinks(t.Dir)
	if err != nil {
		return "", fmt.Errorf("resolving the project folder: %w", err)
	}
	full := p
	if !filepath.IsAbs(full) {
		full = filepath.Join(dir, p)
	}
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, cleanErr(err))
	}
	rel, err := filepath.Rel(dir, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		if real != filepath.Clean(full) {
			return "", fmt.Errorf("%s leads outside the project folder (through a symlink); only files inside it can be sent", p)
		}
		return "", fmt.Errorf("%s is outside the project folder; only files inside it can be sent", p)
	}
	return filepath.ToSlash(rel), nil
}

// allowed refuses ship's own files: its config, its secrets and its
// state, except the files of req's own chat kept under .ship/files.
func (t *ChatSendFile) allowed(req dispatch.RequestContext, rel string) error {
	first, _, _ := strings.Cut(rel, "/")
	for _, name := range t.Private {
		if first != name {
			continue
		}
		if name == ".ship" {
			stem, err := chat.EscapeChatKey(req.ChatKey)
			if err == nil && strings.HasPrefix(rel, media.Dir+"/"+stem+"/") {
				return nil
			}
			return fmt.Errorf("%s is ship's own state; of it, only this chat's files under %s/%s can be sent", rel, media.Dir, stem)
		}
		return fmt.Errorf("%s is ship's own configuration or secrets and cannot be sent", rel)
	}
	return nil
}

// keep copies each file under .ship/files, so what is sent, logged and
// offered for download is one fixed copy.
func (t *ChatSendFile) keep(ctx context.Context, req dispatch.RequestContext, ps []picked) ([]dispatch.OutFile, []dispatch.Artifact, error) {
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the project folder: %w", err)
	}
	defer root.Close()
	stamp := "out" + strconv.FormatInt(time.Now().UnixNano(), 36)
	outs := make([]dispatch.OutFile, len(ps))
	arts := make([]dispatch.Artifact, len(ps))
	for i, p := range ps {
		src, err := root.Open(filepath.FromSlash(p.rel))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.rel, cleanErr(err))
		}
		f, err := t.Keep.Save(ctx, req.ChatKey, fmt.Sprintf("%s-%d", stamp, i), p.kind, p.name, p.mime, io.LimitReader(src, p.bytes+1))
		src.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("keeping a copy of %s: %w", p.rel, err)
		}
		if f.Bytes != p.bytes {
			return nil, nil, fmt.Errorf("%s changed while it was being sent; try again", p.rel)
		}
		kept := f
		outs[i] = dispatch.OutFile{Name: p.name, Kind: p.kind, MIME: p.mime, Bytes: f.Bytes,
			Open: func() (io.ReadCloser, error) { return t.Keep.Open(ctx, kept) }}
		arts[i] = dispatch.Artifact{Name: p.name, Kind: p.kind, MIME: p.mime, Bytes: f.Bytes, Path: f.Path, URL: dispatch.FileURL(f.Path)}
	}
	return outs, arts, nil
}

// mimeOf is a file's type: what its bytes say, or its extension's type
// where the bytes are not telling (text, most documents).
func mimeOf(name string, head []byte) string {
	t := http.DetectContentType(head)
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	if t == "application/octet-stream" || strings.HasPrefix(t, "text/plain") {
		if ext := mime.TypeByExtension(strings.ToLower(path.Ext(name))); ext != "" {
			if i := strings.IndexByte(ext, ';'); i >= 0 {
				ext = ext[:i]
			}
			return ext
		}
	}
	return t
}

// kindsOf are the media kinds a file may go as, best first: a voice
// note (Ogg/Opus, which Telegram's sendVoice and Feishu's audio messages
// take, or SILK/AMR, QQ's voice formats) as a voice note, else as audio,
// else as a document; an image or a video as such, else as a document.
func kindsOf(typ, ext string) []string {
	ext = strings.ToLower(ext)
	switch {
	case typ == "image/png" || typ == "image/jpeg" || typ == "image/gif" || typ == "image/webp":
		return []string{media.KindImage, media.KindFile}
	case strings.HasPrefix(typ, "video/"):
		return []string{media.KindVideo, media.KindFile}
	case typ == "application/ogg" || typ == "audio/ogg" || ext == ".opus" || ext == ".silk" || ext == ".amr":
		return []string{media.KindVoice, media.KindAudio, media.KindFile}
	case strings.HasPrefix(typ, "audio/"):
		return []string{media.KindAudio, media.KindFile}
	}
	return []string{media.KindFile}
}

func kindWord(kind string) string {
	switch kind {
	case media.KindImage:
		return "image"
	case media.KindFile:
		return "other"
	}
	return kind
}

// captionLen counts a caption as the platforms do at most (UTF-16
// units, which is ≥ characters).
func captionLen(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// cleanErr keeps the reason of a path error without the absolute path
// (which would tell the model where the project lives on the host).
func cleanErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
