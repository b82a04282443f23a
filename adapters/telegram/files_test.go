package telegram_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shipmyagent/ship/adapters/markdown"
	"github.com/shipmyagent/ship/adapters/telegram"
	"github.com/shipmyagent/ship/internal/faketelegram"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// outFile is a file of content for SendFiles; opens counts its openings.
func outFile(name, kind, mime string, content []byte, opens *atomic.Int32) dispatch.OutFile {
	return dispatch.OutFile{Name: name, Kind: kind, MIME: mime, Bytes: int64(len(content)),
		Open: func() (io.ReadCloser, error) {
			if opens != nil {
				opens.Add(1)
			}
			return io.NopCloser(bytes.NewReader(content)), nil
		}}
}

// hugeFile claims size bytes and fails the test if anything reads it.
func hugeFile(t *testing.T, name, kind string, size int64) dispatch.OutFile {
	return dispatch.OutFile{Name: name, Kind: kind, MIME: "application/octet-stream", Bytes: size,
		Open: func() (io.ReadCloser, error) {
			t.Errorf("%s was opened: it is over the limit and must be refused unread", name)
			return nil, errors.New("must not be read")
		}}
}

// A PNG sent into a forum topic arrives there as a photo, replying to the
// message that asked, with its Markdown caption as entities; SendFiles
// returns the file_id of the photo's largest size.
func TestPNGGoesToTheTopicAsAPhoto(t *testing.T) {
	e := newEnv(t, setup{})
	png := faketelegram.PNG(640, 480)
	req := topicRequest("-100500", 11, "301")
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("chart.png", "image", "image/png", png, nil)},
		"**Sales** by month, see `chart.png`")
	if err != nil {
		t.Fatal(err)
	}
	files := e.tg.SentFiles()
	if len(files) != 1 {
		t.Fatalf("sent files %+v, want one", files)
	}
	f := files[0]
	if f.Method != "sendPhoto" || f.Type != "photo" || f.ChatID != -100500 || f.ThreadID != 11 || f.ReplyTo != 301 ||
		!bytes.Equal(f.Bytes, png) || f.FileName != "chart.png" || f.MIME != "image/png" || f.Width != 640 || f.Height != 480 {
		t.Errorf("sent %+v; want chart.png as a 640x480 photo in topic 11, a reply to 301", f)
	}
	wantText, wantEnts := markdown.Telegram("**Sales** by month, see `chart.png`")
	var ents []markdown.Entity
	if err := json.Unmarshal([]byte(f.CaptionEntities), &ents); err != nil || f.Caption != wantText || f.ParseMode != "" ||
		len(ents) != len(wantEnts) || ents[0] != wantEnts[0] || ents[1] != wantEnts[1] {
		t.Errorf("caption %q entities %s, want %q with %+v", f.Caption, f.CaptionEntities, wantText, wantEnts)
	}
	if len(ids) != 1 || ids[0] != f.FileID {
		t.Errorf("ids %q, want the photo's file_id %q", ids, f.FileID)
	}
	if got, ok := e.tg.FileContent(ids[0]); !ok || !bytes.Equal(got, png) {
		t.Errorf("the returned file_id does not hold the photo")
	}
	if n := len(e.tg.Sent()); n != 1 {
		t.Errorf("%d messages sent, want the photo alone", n)
	}
}

// Three files go as one album, the caption on its first item; a PDF and a
// voice note after them go as a document and a voice note of their own,
// since documents share albums only with documents and voice notes with
// none. The ids come back in the files' order.
func TestAlbumsAndTheirLimits(t *testing.T) {
	e := newEnv(t, setup{})
	req := topicRequest("-100500", 22, "40")
	files := []dispatch.OutFile{
		outFile("a.png", "image", "image/png", faketelegram.PNG(100, 80), nil),
		outFile("b.png", "image", "image/png", faketelegram.PNG(80, 100), nil),
		outFile("clip.mp4", "video", "video/mp4", []byte("not really a video"), nil),
		outFile("report.pdf", "file", "application/pdf", []byte("%PDF-1.4"), nil),
		outFile("note.ogg", "voice", "audio/ogg", []byte("OggS"), nil),
	}
	ids, err := e.adapter.SendFiles(e.ctx(), req, files, "Three _views_")
	if err != nil {
		t.Fatal(err)
	}
	sent := e.tg.SentFiles()
	if len(sent) != 5 || len(ids) != 5 {
		t.Fatalf("sent %d files, ids %q; want 5 of each", len(sent), ids)
	}
	wantMethod := []string{"sendMediaGroup", "sendMediaGroup", "sendMediaGroup", "sendDocument", "sendVoice"}
	wantType := []string{"photo", "photo", "video", "document", "voice"}
	for i, f := range sent {
		if f.Method != wantMethod[i] || f.Type != wantType[i] || f.FileName != files[i].Name || f.ThreadID != 22 || f.ReplyTo != 40 || ids[i] != f.FileID {
			t.Errorf("file %d: %+v (id %q); want %s as %s in topic 22", i, f, ids[i], files[i].Name, wantType[i])
		}
	}
	if sent[0].MediaGroupID == "" || sent[1].MediaGroupID != sent[0].MediaGroupID || sent[2].MediaGroupID != sent[0].MediaGroupID {
		t.Errorf("the first three are not one album: %q %q %q", sent[0].MediaGroupID, sent[1].MediaGroupID, sent[2].MediaGroupID)
	}
	if sent[0].Caption != "Three views" || sent[0].CaptionEntities == "" || sent[1].Caption != "" || sent[3].Caption != "" {
		t.Errorf("captions %q %q %q; want the caption on the first file only", sent[0].Caption, sent[1].Caption, sent[3].Caption)
	}
}

// A 12 MB image is over the 10 MB of a photo and a 51 MB document over
// the 50 MB of any upload: SendFiles refuses them with the reason before
// reading or sending anything, the files beside them included.
func TestFilesOverTheLimitsAreRefusedAndNothingIsSent(t *testing.T) {
	e := newEnv(t, setup{})
	req := topicRequest("-100500", 11, "301")
	small := outFile("ok.png", "image", "image/png", faketelegram.PNG(10, 10), nil)
	for _, tc := range []struct {
		file dispatch.OutFile
		want string
	}{
		{hugeFile(t, "big.png", "image", 12<<20), "limit of 10 MB"},
		{hugeFile(t, "dump.tar", "file", 51<<20), "limit of 50 MB"},
	} {
		_, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{small, tc.file}, "here")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file.Name) {
			t.Errorf("%s: err = %v, want one naming the file and %q", tc.file.Name, err, tc.want)
		}
	}
	if n := len(e.tg.SentFiles()) + len(e.tg.Sent()); n != 0 {
		t.Errorf("%d things sent for refused files", n)
	}
}

// A caption longer than Telegram's 1,024 goes as a message of its own
// before the file; flood control on the upload (429) waits and sends the
// file again from its start, once.
func TestLongCaptionAndARetriedUpload(t *testing.T) {
	e := newEnv(t, setup{})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42", MessageID: "5"}
	e.tg.FailNext("sendDocument", 1, faketelegram.Failure{ErrorCode: 429, RetryAfter: 1})
	var opens atomic.Int32
	content := bytes.Repeat([]byte("log line\n"), 1000)
	caption := "**Build log**\n\n" + strings.Repeat("All steps passed. ", 80)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("build.log", "file", "text/plain", content, &opens)}, caption)
	if err != nil {
		t.Fatal(err)
	}
	sent := e.tg.Sent()
	if len(sent) != 2 || sent[0].Method != "sendMessage" || !strings.HasPrefix(sent[0].Text, "Build log") ||
		sent[0].Params["entities"] == "" || sent[1].Method != "sendDocument" || sent[1].Text != "" {
		t.Fatalf("sent %+v; want the caption as a formatted message, then the document without caption", sent)
	}
	files := e.tg.SentFiles()
	if len(files) != 1 || !bytes.Equal(files[0].Bytes, content) || files[0].ReplyTo != 0 || ids[0] != files[0].FileID {
		t.Errorf("files %+v, ids %q", files, ids)
	}
	if n := e.tg.Calls("sendDocument"); n != 2 || opens.Load() != 2 {
		t.Errorf("sendDocument called %d times, file opened %d times; want 2 and 2 (one 429, one retry)", n, opens.Load())
	}
}

// When the second send of files fails after the first went, the error says
// how far it got (a *dispatch.PartError) and the ids of what went come
// back.
func TestFilesPartlySent(t *testing.T) {
	e := newEnv(t, setup{})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	e.tg.FailNext("sendDocument", 1, faketelegram.Failure{ErrorCode: 403})
	files := []dispatch.OutFile{
		outFile("a.png", "image", "image/png", faketelegram.PNG(20, 20), nil),
		outFile("b.txt", "file", "text/plain", []byte("b"), nil),
	}
	ids, err := e.adapter.SendFiles(e.ctx(), req, files, "")
	var pe *dispatch.PartError
	if !errors.As(err, &pe) || pe.Part != 2 || pe.Parts != 2 || !strings.Contains(err.Error(), "403") {
		t.Fatalf("err = %v, want part 2 of 2 failing with the 403", err)
	}
	if got := e.tg.SentFiles(); len(got) != 1 || len(ids) != 1 || ids[0] != got[0].FileID {
		t.Errorf("ids %q, sent %+v; want the photo's id", ids, got)
	}
}

// FileLimits states Telegram's documented limits.
func TestFileLimits(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	l := e.adapter.FileLimits(dispatch.RequestContext{})
	if l.MaxBytes["image"] != 10<<20 || l.MaxBytes["file"] != 50<<20 || l.MaxBytes["voice"] != 50<<20 ||
		l.MaxFiles != telegram.MaxAlbum || l.MaxCaption != 1024 {
		t.Errorf("limits %+v", l)
	}
}

// An image Telegram would refuse as a photo (sides more than 1:20 apart)
// goes whole as a document; with a parse_mode configured the caption goes
// as written, in that dialect.
func TestNarrowImageGoesAsADocumentAndParseModeCaptions(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *telegram.Options) { o.ParseMode = "HTML" }})
	req := dispatch.RequestContext{Channel: "telegram", ChatID: "42", ChatType: "private", ChatKey: "telegram:chat:42"}
	strip := faketelegram.PNG(420, 20)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("strip.png", "image", "image/png", strip, nil)}, "<b>wide</b> strip")
	if err != nil {
		t.Fatal(err)
	}
	f := e.tg.SentFiles()
	if len(f) != 1 || f[0].Method != "sendDocument" || !bytes.Equal(f[0].Bytes, strip) || f[0].Caption != "<b>wide</b> strip" ||
		f[0].ParseMode != "HTML" || ids[0] != f[0].FileID {
		t.Errorf("sent %+v; want strip.png as a document with the HTML caption", f)
	}
}
