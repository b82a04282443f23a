package faketelegram

import (
	"bytes"
	"image"
	"image/png"
)

// WithPhoto turns a message update (from PrivateText, GroupText, …) into a
// photo message: the text becomes the caption and the photo, served by
// getFile and the file route, has content as its bytes. fileID names it.
func (s *Server) WithPhoto(u Update, fileID string, width, height int, content []byte) Update {
	s.AddFile(fileID, "photos/"+fileID+".jpg", content)
	return asMedia(u, "photo", []any{
		map[string]any{"file_id": fileID + "-small", "file_unique_id": fileID + "s", "width": width / 4, "height": height / 4, "file_size": 1},
		map[string]any{"file_id": fileID, "file_unique_id": fileID, "width": width, "height": height, "file_size": len(content)},
	})
}

// WithVoice turns a message update into a voice note (Ogg/Opus, as the
// apps record them) of content, lasting seconds.
func (s *Server) WithVoice(u Update, fileID string, seconds int, content []byte) Update {
	s.AddFile(fileID, "voice/"+fileID+".oga", content)
	return asMedia(u, "voice", map[string]any{
		"file_id": fileID, "file_unique_id": fileID, "duration": seconds, "mime_type": "audio/ogg", "file_size": len(content),
	})
}

// asMedia moves the message's text to its caption and adds the media field.
func asMedia(u Update, field string, value any) Update {
	m, ok := u["message"].(map[string]any)
	if !ok {
		panic("faketelegram: the update has no message")
	}
	if text, ok := m["text"].(string); ok {
		delete(m, "text")
		if text != "" {
			m["caption"] = text
		}
		if ents, ok := m["entities"]; ok {
			delete(m, "entities")
			m["caption_entities"] = ents
		}
	}
	m[field] = value
	return u
}

// PNG returns a w×h PNG image, for tests that send photos: the fake
// measures photos as Telegram does and refuses bytes that are no picture.
func PNG(w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic("faketelegram: encoding a PNG: " + err.Error())
	}
	return b.Bytes()
}
