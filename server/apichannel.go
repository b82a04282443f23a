package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/tools"
)

// Limits of a send of files into an api chat. The files are already kept
// under .ship/files by chat_send_file and reach the client as artifacts
// (the artifact event, /api/execute's artifacts, GET /api/files/…), so the
// only bound is what ship keeps of one file; the caption bound matches the
// longest platform caption so a model's caption reads the same everywhere.
const (
	apiMaxFiles   = 10
	apiMaxCaption = 4096
)

// apiKinds are the kinds of media an api chat takes, each up to
// tools.MaxKeptFileBytes: an HTTP client downloads any of them alike.
var apiKinds = [...]string{"image", "video", "audio", "voice", "file"}

// apiChannel is the api channel's dispatcher: a reply "arrives" by being
// added to the collector of its run (sendText), and files arrive as
// artifacts the client downloads (SendFiles). It shows no buttons: a
// question reaches an api chat as numbered text (the core does that) and
// as a ui event carrying its choices.
type apiChannel struct{ s *Server }

var _ dispatch.FileSender = apiChannel{}

// SendText adds text to the replies of its run (Server.sendText).
func (a apiChannel) SendText(ctx context.Context, req dispatch.RequestContext, text string) error {
	return a.s.sendText(ctx, req, text)
}

// FileLimits says what an api chat takes: every kind up to the size of
// the copy ship keeps, ten files a send.
func (a apiChannel) FileLimits(dispatch.RequestContext) dispatch.FileLimits {
	m := make(map[string]int64, len(apiKinds))
	for _, k := range apiKinds {
		m[k] = tools.MaxKeptFileBytes
	}
	return dispatch.FileLimits{MaxBytes: m, MaxFiles: apiMaxFiles, MaxCaption: apiMaxCaption}
}

// SendFiles "sends" files that are already kept under .ship/files: the
// client learns of them from the artifact event and the run's result, so
// only the caption is added to the run's replies. It refuses, sending
// nothing, what FileLimits does not allow. An api chat has no file ids.
func (a apiChannel) SendFiles(ctx context.Context, req dispatch.RequestContext, files []dispatch.OutFile, caption string) ([]string, error) {
	lim := a.FileLimits(req)
	if len(files) > lim.MaxFiles {
		return nil, fmt.Errorf("sending files to the api chat: %d files, at most %d a send", len(files), lim.MaxFiles)
	}
	for _, f := range files {
		max, ok := lim.MaxBytes[f.Kind]
		if !ok {
			return nil, fmt.Errorf("sending files to the api chat: %s is of kind %q, which is not taken", f.Name, f.Kind)
		}
		if f.Bytes > max {
			return nil, fmt.Errorf("sending files to the api chat: %s is %d bytes, over the limit of %d", f.Name, f.Bytes, max)
		}
	}
	if n := len([]rune(caption)); n > lim.MaxCaption {
		return nil, fmt.Errorf("sending files to the api chat: the caption is %d characters, over %d", n, lim.MaxCaption)
	}
	if strings.TrimSpace(caption) != "" {
		if err := a.s.sendText(ctx, req, caption); err != nil {
			return nil, err
		}
	}
	return make([]string, len(files)), nil
}
