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
// other files. scheme completes scheme-relative URLs (mediaURL).
func attachments(atts []attachment, scheme string) []adapters.Attachment {
	var out []adapters.Attachment
	for i, at := range atts {
		if at.URL == "" {
			continue
		}
		name := at.FileName
		if name == "" {
			name = fmt.Sprintf("attachment-%d", i+1)
		}
		a := adapters.Attachment{Name: name, MIME: at.ContentType, Size: at.Size, Fetch: fetchURL(at.URL, scheme)}
		switch {
		case at.ContentType == "voice":
			a.Kind, a.Label, a.MIME = adapters.KindVoice, "voice message", ""
			if at.VoiceWavURL != "" {
				a.Name = strings.TrimSuffix(name, path.Ext(name)) + ".wav"
				a.MIME, a.Size, a.Fetch = "audio/wav", 0, fetchURL(at.VoiceWavURL, scheme)
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

// mediaURL makes an attachment URL as QQ sends it absolute. QQ sends
// scheme-relative URLs ("//multimedia.nt.qq.com.cn/…"): they take scheme,
// the scheme of the API base ship talks to, which is what a browser would
// do on QQ's pages (https with QQ; the loopback fakes of tests serve http).
// A full URL is kept. A bare "host/path" (as guild attachments have come,
// "gchat.qpic.cn/…") is read host first, as before: a path alone names no
// server to fetch from. Only http(s) URLs with a host are fetched.
func mediaURL(raw, scheme string) (string, error) {
	switch {
	case strings.HasPrefix(raw, "//"):
		raw = scheme + ":" + raw
	case !strings.Contains(raw, "://"):
		raw = scheme + "://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("qq attachment: not an http(s) URL")
	}
	return u.String(), nil
}

// mediaScheme is the scheme scheme-relative attachment URLs take: the API
// base's, https unless that is plain http.
func mediaScheme(apiBase string) string {
	if u, err := url.Parse(apiBase); err == nil && u.Scheme == "http" {
		return "http"
	}
	return "https"
}

// fetchURL downloads an attachment from QQ's media servers, which need no
// credentials (scheme: see mediaURL).
func fetchURL(raw, scheme string) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		abs, err := mediaURL(raw, scheme)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, abs, nil)
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
