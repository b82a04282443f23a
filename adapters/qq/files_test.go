package qq_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakeqq"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// png is a real PNG header and a little more: QQ (and the fake) check the
// format by its bytes.
var png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)

func outFile(name, kind, mime string, b []byte) dispatch.OutFile {
	return dispatch.OutFile{Name: name, Kind: kind, MIME: mime, Bytes: int64(len(b)),
		Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}
}

// asked pushes a message, waits for the bot's answer to it and returns
// the request context a file send in that chat carries.
func (e *env) asked(kind string, ev fakeqq.Event, chatID string, sentBefore int) dispatch.RequestContext {
	e.t.Helper()
	e.waitSent(sentBefore + 1)
	e.idle()
	return dispatch.RequestContext{Channel: "qq", ChatType: kind, ChatID: chatID,
		ChatKey: "qq:" + kind + ":" + chatID, MessageID: ev.MessageID}
}

func TestPNGToAGroupArrivesAsRichMedia(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G1", "M1", "draw")
	req := e.asked("group", ev, "G1", 0)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("chart.png", "image", "image/png", png)}, "**The chart**")
	if err != nil {
		t.Fatal(err)
	}
	ups := e.qq.Uploads()
	if len(ups) != 1 || ups[0].Path != fakeqq.GroupFilesPath("G1") || ups[0].FileType != 1 || !bytes.Equal(ups[0].Bytes, png) {
		t.Fatalf("uploads %+v; want the PNG uploaded as an image (file_type 1) to the group", ups)
	}
	if len(ids) != 1 || ids[0] != ups[0].FileInfo {
		t.Errorf("ids %q, want the upload's file_info %q", ids, ups[0].FileInfo)
	}
	sent := e.waitSent(3)
	caption, media := sent[1], sent[2]
	if caption.Content != "The chart" || caption.MsgID != ev.MessageID || caption.MsgSeq != 2 {
		t.Errorf("caption %+v; want the rendered caption as reply 2", caption)
	}
	if media.Path != fakeqq.GroupPath("G1") || media.MsgType != 7 || media.Media == nil || media.Media.FileInfo != ids[0] ||
		media.MsgID != ev.MessageID || media.MsgSeq != 3 {
		t.Errorf("media message %+v; want msg_type 7 with the file_info as reply 3 to %s", media, ev.MessageID)
	}
}

func TestPNGToAC2CChatArrivesAsRichMedia(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushC2C("U1", "draw")
	req := e.asked("c2c", ev, "U1", 0)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("chart.png", "image", "image/png", png)}, "")
	if err != nil {
		t.Fatal(err)
	}
	ups := e.qq.Uploads()
	if len(ups) != 1 || ups[0].Path != fakeqq.C2CFilesPath("U1") || len(ids) != 1 || ids[0] != ups[0].FileInfo {
		t.Fatalf("uploads %+v, ids %q", ups, ids)
	}
	media := e.waitSent(2)[1]
	if media.Path != fakeqq.C2CPath("U1") || media.MsgType != 7 || media.Media == nil || media.Media.Kind != "c2c" ||
		media.MsgID != ev.MessageID || media.MsgSeq != 2 {
		t.Errorf("media message %+v", media)
	}
}

func TestImageToAGuildChannelGoesAsFileImage(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushChannelAt("GUILD1", "CH1", "U5", "draw")
	req := e.asked("channel", ev, "CH1", 0)
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("chart.png", "image", "image/png", png)}, "")
	if err != nil {
		t.Fatal(err)
	}
	img := e.waitSent(2)[1]
	if img.Path != fakeqq.ChannelPath("CH1") || !bytes.Equal(img.Image, png) || img.MsgID != ev.MessageID {
		t.Fatalf("sent %+v; want the PNG as file_image in reply to %s", img, ev.MessageID)
	}
	if len(ids) != 1 || ids[0] != img.ID {
		t.Errorf("ids %q, want the message id %q", ids, img.ID)
	}
}

func TestFilesQQDoesNotTakeAreRefusedWithNothingSent(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G1", "M1", "send")
	req := e.asked("group", ev, "G1", 0)
	big := append(append([]byte(nil), png...), make([]byte, 10<<20)...)
	lying := outFile("big.png", "image", "image/png", big)
	lying.Bytes = 100 // what the file said when it was checked; it grew since
	for name, tc := range map[string]struct {
		f    dispatch.OutFile
		want string
	}{
		"oversize":            {outFile("big.png", "image", "image/png", big), "at most 10485760 bytes"},
		"grew after checking": {lying, "over the platform's size limit of 10 MB"},
		"any file":            {outFile("report.pdf", "file", "application/pdf", []byte("%PDF-1.4")), "no file files"},
		"audio":               {outFile("song.mp3", "audio", "audio/mpeg", []byte("ID3")), "no audio files"},
		"webp image":          {outFile("x.webp", "image", "image/webp", []byte("RIFF")), "only as image/png, image/jpeg"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("ok.png", "image", "image/png", png), tc.f}, "caption")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if ups, sent := e.qq.Uploads(), e.qq.Sent(); len(ups) != 0 || len(sent) != 1 {
		t.Errorf("uploads %+v and %d messages; want nothing sent after the answer", ups, len(sent))
	}
	// A guild channel takes images only.
	ev = e.qq.PushChannelAt("GUILD1", "CH1", "U5", "send")
	req = e.asked("channel", ev, "CH1", 1)
	mp4 := []byte("\x00\x00\x00\x18ftypmp42")
	if _, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("a.mp4", "video", "video/mp4", mp4)}, ""); err == nil ||
		!strings.Contains(err.Error(), "no video files in a channel chat") {
		t.Errorf("video to a channel: err = %v", err)
	}
}

func TestASecondFileQQRefusesIsAPartError(t *testing.T) {
	e := newEnv(t, setup{})
	ev := e.qq.PushGroupAt("G1", "M1", "send")
	req := e.asked("group", ev, "G1", 0)
	// Labelled PNG, but not one: QQ refuses it when converting.
	fake := outFile("fake.png", "image", "image/png", []byte("not a png at all"))
	ids, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("a.png", "image", "image/png", png), fake}, "")
	var pe *dispatch.PartError
	if !errors.As(err, &pe) || pe.Part != 2 || pe.Parts != 2 || !strings.Contains(err.Error(), "304083") {
		t.Fatalf("err = %v; want part 2 of 2 not delivered, with QQ's code", err)
	}
	if len(ids) != 1 || len(e.qq.Uploads()) != 1 {
		t.Errorf("ids %q, uploads %d; want the first file sent", ids, len(e.qq.Uploads()))
	}
	// The refused file used no reply: three of five are left (answer, file 1).
	if _, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("b.png", "image", "image/png", png),
		outFile("c.png", "image", "image/png", png), outFile("d.png", "image", "image/png", png)}, ""); err != nil {
		t.Errorf("three more files to the same message: %v", err)
	}
	if _, err := e.adapter.SendFiles(e.ctx(), req, []dispatch.OutFile{outFile("e.png", "image", "image/png", png)}, ""); !errors.Is(err, dispatch.ErrReplyLimit) {
		t.Errorf("a sixth reply: err = %v, want ErrReplyLimit", err)
	}
}
