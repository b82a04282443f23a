package qq

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/tencent-connect/botgo/dto"

	"github.com/shipmyagent/ship/adapters"
)

// downloadTimeout bounds one attachment download.
const downloadTimeout = 2 * time.Minute

// attachment is one attachment as QQ sends it. botgo's MessageAttachment
// lacks voice_wav_url, the .wav version QQ offers of a voice message
// (whose own file is SILK or AMR, which transcription endpoints refuse),
// so attachments are read from the raw payload.
type attachment struct {
	ContentType string `json:"content_type"`
	FileName    string `json:"filename"`
	URL         string `json:"url"`
	Size        int64  `json:"size"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	VoiceWavURL string `json:"voice_wav_url"`
}

// attachmentsOf reads the attachments of a message event from its raw
// payload, or from botgo's parse when the payload cannot be read.
func attachmentsOf(raw []byte, m *dto.Message) []attachment {
	var p struct {
		D struct {
			Attachments []attachment `json:"attachments"`
		} `json:"d"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &p) == nil && len(p.D.Attachments) > 0 {
		return p.D.Attachments
	}
	var out []attachment
	for _, at := range m.Attachments {
		if at != nil {
			out = append(out, attachment{ContentType: at.ContentType, FileName: at.FileName, URL: at.URL,
				Size: int64(at.Size), Width: at.Width, Height: at.Height})
		}
	}
	return out
}

// attachments turns QQ's attachments into files to fetch: images, voice
// (its .wav version when QQ offers one: no conversion needed), video and
// other files.
func attachments(atts []attachment) []adapters.Attachment {
	var out []adapters.Attachment
	for i, at := range atts {
		if at.URL == "" {
			continue
		}
		name := at.FileName
		if name == "" {
			name = fmt.Sprintf("attachment-%d", i+1)
		}
		a := adapters.Attachment{Name: name, MIME: at.ContentType, Size: at.Size, Fetch: fetchURL(at.URL)}
		switch {
		case at.ContentType == "voice":
			a.Kind, a.Label, a.MIME = adapters.KindVoice, "voice message", ""
			if at.VoiceWavURL != "" {
				a.Name = strings.TrimSuffix(name, path.Ext(name)) + ".wav"
				a.MIME, a.Size, a.Fetch = "audio/wav", 0, fetchURL(at.VoiceWavURL)
			}
		case strings.HasPrefix(at.ContentType, "image/"):
			a.Kind, a.Label = adapters.KindImage, "image"
			if at.Width > 0 && at.Height > 0 {
				a.Label = fmt.Sprintf("image (%dx%d)", at.Width, at.Height)
			}
		case strings.HasPrefix(at.ContentType, "video/"):
			a.Kind, a.Label = adapters.KindVideo, fmt.Sprintf("video %q", at.FileName)
		default:
			a.Kind, a.Label = adapters.KindFile, strings.TrimSpace(fmt.Sprintf("file %q %s", at.FileName, at.ContentType))
		}
		out = append(out, a)
	}
	return out
}

// fetchURL downloads an attachment from QQ's media servers, which need no
// credentials. QQ often sends the URL without a scheme.
func fetchURL(raw string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		if !strings.Contains(raw, "://") {
			raw = "https://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("qq attachment: not an http(s) URL")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("qq attachment: %w", err)
		}
		resp, err := (&http.Client{Timeout: downloadTimeout}).Do(req)
		if err != nil {
			return nil, fmt.Errorf("qq attachment: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			return nil, fmt.Errorf("qq attachment: status %d", resp.StatusCode)
		}
		return resp.Body, nil
	}
}
