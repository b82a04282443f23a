package agent

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/media"
)

// maxImageBytes is the largest image shown to the model: Anthropic's limit
// per image (OpenAI takes up to 20 MB). A larger one is only described.
const maxImageBytes = 5 << 20

// imageTypes are the image formats both OpenAI and Anthropic take.
var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// fetchFiles makes the files of the message being answered present on
// this replica's disk before the run: in a cluster another replica may
// have received them, and the text the model reads tells it their paths
// (a tool may open them). Alone it only opens each file once. A file that
// cannot be had is logged; the text already describes it.
func (r *Runtime) fetchFiles(ctx context.Context, files []media.File, log zerolog.Logger) {
	if r.opts.Files == nil {
		return
	}
	for _, f := range files {
		if err := r.opts.Files.Fetch(ctx, f); err != nil {
			log.Warn().Err(err).Str("path", f.Path).Msg("a file of the message is not on this replica")
		}
	}
}

// withImages adds the message's images to the current user message as
// image parts (data URLs), when the model is vision-capable. The text
// already describes every file, so an image that cannot be shown (too
// large, a format the APIs refuse, gone from disk and from the other
// replicas) is logged and left out. Only the run sees the bytes: the turn
// kept as history holds the text.
func (r *Runtime) withImages(ctx context.Context, user llms.MessageContent, files []media.File, vision bool, log zerolog.Logger) llms.MessageContent {
	if !vision || len(files) == 0 || r.opts.Files == nil {
		return user
	}
	parts := slices.Clone(user.Parts)
	for _, f := range files {
		if f.Kind != media.KindImage {
			continue
		}
		b, err := r.opts.Files.Read(ctx, f, maxImageBytes)
		if err != nil {
			log.Warn().Err(err).Str("path", f.Path).Msg("image not shown to the model")
			continue
		}
		// The bytes decide, not the platform's word: the APIs refuse an
		// image whose declared type does not match.
		mime := http.DetectContentType(b)
		if i := strings.IndexByte(mime, ';'); i >= 0 {
			mime = mime[:i]
		}
		if !slices.Contains(imageTypes, mime) {
			log.Info().Str("path", f.Path).Str("mime", mime).Msg("image format the model APIs do not take; described only")
			continue
		}
		parts = append(parts, llms.ImageURLContent{URL: "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)})
	}
	return llms.MessageContent{Role: user.Role, Parts: parts}
}
