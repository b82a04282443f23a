package feishu_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// memFile is an OutFile over b, claiming size bytes (b's length when 0).
func memFile(name, kind, mime string, b []byte, size int64) dispatch.OutFile {
	if size == 0 {
		size = int64(len(b))
	}
	return dispatch.OutFile{Name: name, Kind: kind, MIME: mime, Bytes: size,
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
}

// A PNG goes up with the image upload and arrives as an image message, a
// reply in the thread of the message that asked for it, after its caption
// rendered like a reply; SendFiles returns the image_key.
func TestPNGArrivesAsAnImageInTheThread(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	ev := e.lk.GroupText("oc_img", "ou_ann", "@_user_1 chart?", e.lk.BotMention("@_user_1")).InThread("omt_9", "om_root")
	req := trigger(e, ev)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{memFile("chart.png", "image", "image/png", pngBytes, 0)}, "Here is the **chart**")
	if err != nil {
		t.Fatal(err)
	}
	ups := e.lk.Uploads()
	if len(ups) != 1 || ups[0].Kind != "image" || ups[0].Type != "message" || !bytes.Equal(ups[0].Data, pngBytes) {
		t.Fatalf("uploads %+v, want the PNG as a message image", ups)
	}
	if !slices.Equal(ids, []string{ups[0].Key}) {
		t.Errorf("ids %v, want the image_key %s", ids, ups[0].Key)
	}
	sent := e.lk.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want the caption and the image", len(sent))
	}
	cap, img := sent[0], sent[1]
	if cap.MsgType != "interactive" || cap.Text != "Here is the chart" || !slices.Equal(cap.Rendered.Bold, []string{"chart"}) {
		t.Errorf("caption %s, want a card with chart in bold", cap.Rendered)
	}
	if img.MsgType != "image" || img.Key != ups[0].Key || img.ChatID != "oc_img" || img.ThreadID != "omt_9" || img.ReplyTo != ev.MessageID {
		t.Errorf("image message %+v, want an image replying in thread omt_9", img)
	}
}

// Over Feishu's limits nothing is sent, not even the caption, and the
// error says why.
func TestOversizedFilesAreRefusedWithNothingSent(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	req := trigger(e, e.lk.P2PText("oc_big", "ou_ann", "send it"))
	for _, c := range []struct {
		f    dispatch.OutFile
		want string
	}{
		{memFile("huge.png", "image", "image/png", pngBytes, 11<<20), "10 MB"},
		{memFile("huge.pdf", "file", "application/pdf", []byte("%PDF"), 31<<20), "30 MB"},
		{memFile("empty.txt", "file", "text/plain", nil, -1), "empty"},
	} {
		files := []dispatch.OutFile{memFile("ok.png", "image", "image/png", pngBytes, 0), c.f}
		_, err := e.adapter.SendFiles(e.ctx(), req, files, "caption")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.f.Name) {
			t.Errorf("%s: err = %v, want one naming the file and %q", c.f.Name, err, c.want)
		}
	}
	if len(e.lk.Sent()) != 0 || len(e.lk.Uploads()) != 0 {
		t.Errorf("sent %d messages and %d uploads, want nothing", len(e.lk.Sent()), len(e.lk.Uploads()))
	}
	lim := e.adapter.FileLimits(req)
	if lim.MaxBytes["image"] != 10<<20 || lim.MaxBytes["file"] != 30<<20 || lim.MaxCaption != 0 {
		t.Errorf("limits %+v", lim)
	}
}

// Each kind goes as Feishu documents it: a PDF as a file (file_type pdf),
// an mp4 as media, Opus as audio, anything else as a stream file.
func TestFileKindsGoAsTheirMessageTypes(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	req := trigger(e, e.lk.P2PText("oc_k", "ou_ann", "files"))
	files := []dispatch.OutFile{
		memFile("report.pdf", "file", "application/pdf", []byte("%PDF-1.4"), 0),
		memFile("clip.mp4", "video", "video/mp4", []byte("....ftypisom"), 0),
		memFile("note.opus", "voice", "audio/opus", []byte("OggS"), 0),
		memFile("log.txt", "file", "text/plain", []byte("hello"), 0),
		memFile("logo.svg", "image", "image/svg+xml", []byte("<svg/>"), 0),
	}
	ids, err := e.adapter.SendFiles(e.ctx(), req, files, "")
	if err != nil {
		t.Fatal(err)
	}
	var types, msgTypes []string
	for _, u := range e.lk.Uploads() {
		types = append(types, u.Type)
	}
	for _, s := range e.lk.Sent() {
		msgTypes = append(msgTypes, s.MsgType)
	}
	if want := []string{"pdf", "mp4", "opus", "stream", "stream"}; !slices.Equal(types, want) {
		t.Errorf("file types %v, want %v", types, want)
	}
	if want := []string{"file", "media", "audio", "file", "file"}; !slices.Equal(msgTypes, want) {
		t.Errorf("message types %v, want %v", msgTypes, want)
	}
	if len(ids) != 5 || ids[0] == "" || ids[0] == ids[1] {
		t.Errorf("ids %v", ids)
	}
}

// When the second file fails after the first went, the error says how far
// the send got.
func TestFailureAfterTheFirstFileIsAPartError(t *testing.T) {
	e := newEnv(t, setup{noStart: true})
	req := trigger(e, e.lk.P2PText("oc_p", "ou_ann", "two"))
	files := []dispatch.OutFile{
		memFile("a.png", "image", "image/png", pngBytes, 0),
		memFile("b.png", "image", "image/png", []byte("not a png at all"), 0),
	}
	ids, err := e.adapter.SendFiles(e.ctx(), req, files, "")
	var pe *dispatch.PartError
	if !errors.As(err, &pe) || pe.Part != 2 || pe.Parts != 2 || !strings.Contains(err.Error(), "b.png") {
		t.Fatalf("err = %v, want part 2 of 2 naming b.png", err)
	}
	if len(ids) != 1 || len(e.lk.Sent()) != 1 || e.lk.Sent()[0].MsgType != "image" {
		t.Errorf("ids %v, sent %d: want the first image only", ids, len(e.lk.Sent()))
	}
}
