package faketelegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// uploadVia sends files with tgbotapi's own multipart upload and returns the
// result, or the error with the response's code.
func uploadVia(t *testing.T, bot *tgbotapi.BotAPI, method string, p tgbotapi.Params, files ...tgbotapi.RequestFile) (json.RawMessage, int, string) {
	t.Helper()
	resp, err := bot.UploadFiles(method, p, files)
	if err != nil {
		if resp == nil {
			t.Fatalf("%s: %v", method, err)
		}
		return nil, resp.ErrorCode, resp.Description
	}
	return resp.Result, 0, ""
}

func fileOf(field, name string, b []byte) tgbotapi.RequestFile {
	return tgbotapi.RequestFile{Name: field, Data: tgbotapi.FileBytes{Name: name, Bytes: b}}
}

// An album of photos and a video, uploaded as attach:// parts into a
// topic, comes back as one Message per item sharing a media_group_id, the
// caption (with its entities) on the first; each file is recorded.
func TestMediaGroup(t *testing.T) {
	s, bot := start(t)
	u := s.TopicText(-1001, 7, 42, "alice", "show me")
	s.Push(u)
	asked := fmt.Sprint(u["message"].(map[string]any)["message_id"])
	media := `[{"type":"photo","media":"attach://a","caption":"Two views","caption_entities":[{"type":"bold","offset":4,"length":5}]},` +
		`{"type":"photo","media":"attach://b"},{"type":"video","media":"attach://c"}]`
	res, code, desc := uploadVia(t, bot, "sendMediaGroup",
		tgbotapi.Params{"chat_id": "-1001", "message_thread_id": "7", "reply_to_message_id": asked, "media": media},
		fileOf("a", "a.png", PNG(40, 30)), fileOf("b", "b.png", PNG(30, 40)), fileOf("c", "c.mp4", []byte("mp4")))
	if code != 0 {
		t.Fatalf("sendMediaGroup: %d %s", code, desc)
	}
	var msgs []tgbotapi.Message
	if err := json.Unmarshal(res, &msgs); err != nil || len(msgs) != 3 {
		t.Fatalf("result %s: %v", res, err)
	}
	if msgs[0].MediaGroupID == "" || msgs[1].MediaGroupID != msgs[0].MediaGroupID || msgs[0].Caption != "Two views" ||
		len(msgs[0].Photo) != 2 || msgs[0].Photo[1].Width != 40 || msgs[2].Video == nil || msgs[0].ReplyToMessage == nil {
		t.Fatalf("messages %+v", msgs)
	}
	files := s.SentFiles()
	if len(files) != 3 || files[0].Method != "sendMediaGroup" || files[0].ThreadID != 7 || fmt.Sprint(files[0].ReplyTo) != asked ||
		files[0].FileName != "a.png" || files[0].MIME != "image/png" || !bytes.Equal(files[0].Bytes, PNG(40, 30)) ||
		files[0].FileID != msgs[0].Photo[1].FileID || files[0].CaptionEntities == "" || files[2].Type != "video" ||
		files[2].MIME != "video/mp4" || files[1].Caption != "" {
		t.Fatalf("SentFiles %+v", files)
	}
	if n := len(s.Sent()); n != 3 {
		t.Errorf("%d Sent, want one per message of the album", n)
	}
}

// The documented rules of sendMediaGroup, sendPhoto and the upload limit,
// each refused with the Bot API's error shape.
func TestFileRules(t *testing.T) {
	s, bot := start(t)
	png := PNG(10, 10)
	two := func(a, b string) tgbotapi.Params {
		return tgbotapi.Params{"chat_id": "42", "media": `[{"type":"` + a + `","media":"attach://x"},{"type":"` + b + `","media":"attach://y"}]`}
	}
	cases := []struct {
		name   string
		method string
		p      tgbotapi.Params
		files  []tgbotapi.RequestFile
		code   int
		desc   string
	}{
		{"one item", "sendMediaGroup", tgbotapi.Params{"chat_id": "42", "media": `[{"type":"photo","media":"attach://x"}]`},
			[]tgbotapi.RequestFile{fileOf("x", "x.png", png)}, 400, "Bad Request: wrong number of media specified: 1, want 2-10"},
		{"document with a photo", "sendMediaGroup", two("photo", "document"),
			[]tgbotapi.RequestFile{fileOf("x", "x.png", png), fileOf("y", "y.txt", []byte("y"))}, 400,
			"Bad Request: document can't be mixed with other media types"},
		{"audio with a video", "sendMediaGroup", two("audio", "video"),
			[]tgbotapi.RequestFile{fileOf("x", "x.mp3", []byte("x")), fileOf("y", "y.mp4", []byte("y"))}, 400,
			"Bad Request: audio can't be mixed with other media types"},
		{"voice in an album", "sendMediaGroup", two("voice", "voice"),
			[]tgbotapi.RequestFile{fileOf("x", "x.ogg", []byte("x")), fileOf("y", "y.ogg", []byte("y"))}, 400,
			`Bad Request: can't parse InputMedia: unsupported media type "voice"`},
		{"missing part", "sendMediaGroup", two("photo", "photo"),
			[]tgbotapi.RequestFile{fileOf("x", "x.png", png)}, 400, "Bad Request: can't parse InputMedia: media not found"},
		{"photo over 10 MB", "sendPhoto", tgbotapi.Params{"chat_id": "42"},
			[]tgbotapi.RequestFile{fileOf("photo", "big.png", make([]byte, 10<<20+1))}, 400, "Bad Request: PHOTO_SAVE_FILE_INVALID"},
		{"photo ratio over 20", "sendPhoto", tgbotapi.Params{"chat_id": "42"},
			[]tgbotapi.RequestFile{fileOf("photo", "strip.png", PNG(21, 1))}, 400, "Bad Request: PHOTO_INVALID_DIMENSIONS"},
		{"photo sides over 10000", "sendPhoto", tgbotapi.Params{"chat_id": "42"},
			[]tgbotapi.RequestFile{fileOf("photo", "wide.png", PNG(5001, 5000))}, 400, "Bad Request: PHOTO_INVALID_DIMENSIONS"},
		{"photo that is no picture", "sendPhoto", tgbotapi.Params{"chat_id": "42"},
			[]tgbotapi.RequestFile{fileOf("photo", "x.png", []byte("not a png"))}, 400, "Bad Request: IMAGE_PROCESS_FAILED"},
		{"caption over 1024", "sendDocument", tgbotapi.Params{"chat_id": "42", "caption": strings.Repeat("é", 1025)},
			[]tgbotapi.RequestFile{fileOf("document", "a.txt", []byte("a"))}, 400, "Bad Request: message caption is too long"},
		{"bad caption entities", "sendDocument",
			tgbotapi.Params{"chat_id": "42", "caption": "hi", "caption_entities": `[{"type":"bold","offset":1,"length":5}]`},
			[]tgbotapi.RequestFile{fileOf("document", "a.txt", []byte("a"))}, 400,
			"Bad Request: can't parse entities: entity 0: [1,6) is outside the text of 2 UTF-16 code units"},
		{"document over 50 MB", "sendDocument", tgbotapi.Params{"chat_id": "42"},
			[]tgbotapi.RequestFile{fileOf("document", "dump.bin", make([]byte, 50<<20+1))}, 413, "Request Entity Too Large"},
	}
	for _, c := range cases {
		_, code, desc := uploadVia(t, bot, c.method, c.p, c.files...)
		if code != c.code || desc != c.desc {
			t.Errorf("%s: %d %q, want %d %q", c.name, code, desc, c.code, c.desc)
		}
	}
	if n := len(s.SentFiles()) + len(s.Sent()); n != 0 {
		t.Errorf("%d things recorded for refused sends", n)
	}
	// At the limits they go: a 1:20 photo, a caption of 1024 characters.
	if _, code, desc := uploadVia(t, bot, "sendPhoto", tgbotapi.Params{"chat_id": "42", "caption": strings.Repeat("é", 1024)},
		fileOf("photo", "strip.png", PNG(20, 1))); code != 0 {
		t.Errorf("photo at the limits: %d %s", code, desc)
	}
}

// sendVoice, sendAudio and sendVideo carry their file in the Message field
// of their kind, with the MIME type of its name.
func TestVoiceAudioVideo(t *testing.T) {
	s, bot := start(t)
	for _, k := range []struct{ method, field, name, mime string }{
		{"sendVoice", "voice", "note.ogg", "audio/ogg"},
		{"sendAudio", "audio", "song.mp3", "audio/mpeg"},
		{"sendVideo", "video", "clip.mp4", "video/mp4"},
	} {
		res, code, desc := uploadVia(t, bot, k.method, tgbotapi.Params{"chat_id": "42"}, fileOf(k.field, k.name, []byte(k.name)))
		if code != 0 {
			t.Fatalf("%s: %d %s", k.method, code, desc)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(res, &m)
		var f struct {
			FileID   string `json:"file_id"`
			MimeType string `json:"mime_type"`
		}
		if err := json.Unmarshal(m[k.field], &f); err != nil || f.FileID == "" || f.MimeType != k.mime {
			t.Errorf("%s: %s", k.method, res)
		}
		if got, ok := s.FileContent(f.FileID); !ok || string(got) != k.name {
			t.Errorf("%s: stored %q", k.method, got)
		}
	}
	if files := s.SentFiles(); len(files) != 3 || files[0].Type != "voice" || files[2].Method != "sendVideo" {
		t.Errorf("SentFiles %+v", files)
	}
}
