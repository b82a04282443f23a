package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/adapters"
)

// Resource types of the message resource API: images (also those inside
// rich text) are "image"; files, audio and video are "file".
const (
	resourceImage = "image"
	resourceFile  = "file"
)

// attachments lists the files a message carries: an image, audio (Feishu
// voice: Ogg/Opus), a file, a video, or the images of a rich-text post.
// Stickers are described only: the resource API does not serve them.
func (a *Adapter) attachments(messageID, msgType, content string) []adapters.Attachment {
	var c struct {
		ImageKey string `json:"image_key"`
		FileKey  string `json:"file_key"`
		FileName string `json:"file_name"`
		Duration int    `json:"duration"` // milliseconds
	}
	if msgType != "post" && json.Unmarshal([]byte(content), &c) != nil {
		return nil
	}
	fetch := func(key, typ string) func(context.Context) (io.ReadCloser, error) {
		return func(ctx context.Context) (io.ReadCloser, error) { return a.resource(ctx, messageID, key, typ) }
	}
	secs := (c.Duration + 999) / 1000
	switch msgType {
	case "image":
		if c.ImageKey != "" {
			return []adapters.Attachment{{Kind: adapters.KindImage, Label: "image", Name: c.ImageKey, Fetch: fetch(c.ImageKey, resourceImage)}}
		}
	case "audio":
		if c.FileKey != "" {
			return []adapters.Attachment{{Kind: adapters.KindVoice, Label: fmt.Sprintf("voice message (%d s)", secs),
				Name: c.FileKey + ".opus", Fetch: fetch(c.FileKey, resourceFile)}}
		}
	case "file":
		if c.FileKey != "" {
			return []adapters.Attachment{{Kind: adapters.KindFile, Label: fmt.Sprintf("file %q", c.FileName),
				Name: nameOr(c.FileName, c.FileKey), Fetch: fetch(c.FileKey, resourceFile)}}
		}
	case "media":
		if c.FileKey != "" {
			return []adapters.Attachment{{Kind: adapters.KindVideo, Label: fmt.Sprintf("video %q (%d s)", c.FileName, secs),
				Name: nameOr(c.FileName, c.FileKey+".mp4"), Fetch: fetch(c.FileKey, resourceFile)}}
		}
	case "post":
		var out []adapters.Attachment
		for i, key := range postImages(content) {
			out = append(out, adapters.Attachment{Kind: adapters.KindImage, Label: fmt.Sprintf("image %d of the post", i+1),
				Name: key, Fetch: fetch(key, resourceImage)})
		}
		return out
	}
	return nil
}

// postImages returns the image keys of a rich-text post, in order.
func postImages(content string) []string {
	var keys []string
	for _, para := range postParagraphs(content) {
		for _, e := range para {
			if e.Tag == "img" && e.ImageKey != "" {
				keys = append(keys, e.ImageKey)
			}
		}
	}
	return keys
}

// resource downloads one file of a message through the message resource
// API. An invalid tenant token is dropped and the call made once more, as
// for sends. The SDK reads the whole answer; the store caps what it keeps.
func (a *Adapter) resource(ctx context.Context, messageID, key, typ string) (io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		resp, err := a.cli.Im.V1.MessageResource.Get(ctx, larkim.NewGetMessageResourceReqBuilder().
			MessageId(messageID).FileKey(key).Type(typ).Build())
		if err != nil {
			return nil, fmt.Errorf("feishu message resource: %s", a.scrub(err.Error()))
		}
		if resp.StatusCode == 200 && resp.File != nil {
			return io.NopCloser(resp.File), nil
		}
		res := resultOf(resp.ApiResp, resp.CodeError)
		if classify(res, nil) == outcomeTokenInvalid && attempt == 0 {
			dropTokens(a.opts.AppID)
			continue
		}
		return nil, fmt.Errorf("feishu message resource: %s", a.failure(res, nil))
	}
}

func nameOr(name, fallback string) string {
	if name != "" {
		return name
	}
	return fallback
}
