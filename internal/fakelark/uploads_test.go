package fakelark_test

import (
	"bytes"
	"strings"
	"testing"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/shipmyagent/ship/internal/fakelark"
)

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func createMsg(t *testing.T, cli *lark.Client, chatID, msgType, content string) *larkim.CreateMessageResp {
	t.Helper()
	resp, err := cli.Im.V1.Message.Create(ctx(t), larkim.NewCreateMessageReqBuilder().ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().ReceiveId(chatID).MsgType(msgType).Content(content).Build()).Build())
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The upload APIs take what Feishu documents and refuse the rest with its
// codes; a message shows only a key an upload of the right kind made.
func TestUploadsFollowFeishusLimits(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	img := func(b []byte) (int, string) {
		resp, err := cli.Im.V1.Image.Create(ctx(t), larkim.NewCreateImageReqBuilder().
			Body(larkim.NewCreateImageReqBodyBuilder().ImageType("message").Image(bytes.NewReader(b)).Build()).Build())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Data != nil && resp.Data.ImageKey != nil {
			return resp.Code, *resp.Data.ImageKey
		}
		return resp.Code, ""
	}
	file := func(typ, name string, b []byte) (int, string) {
		resp, err := cli.Im.V1.File.Create(ctx(t), larkim.NewCreateFileReqBuilder().
			Body(larkim.NewCreateFileReqBodyBuilder().FileType(typ).FileName(name).File(bytes.NewReader(b)).Build()).Build())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Data != nil && resp.Data.FileKey != nil {
			return resp.Code, *resp.Data.FileKey
		}
		return resp.Code, ""
	}
	code, key := img(png)
	if code != 0 || !strings.HasPrefix(key, "img_") {
		t.Fatalf("PNG upload: code %d key %q", code, key)
	}
	if code, _ := img(append(png, make([]byte, fakelark.MaxImageBytes)...)); code != fakelark.CodeUploadSize {
		t.Errorf("11 MB image: code %d", code)
	}
	if code, _ := img([]byte("plain text")); code != fakelark.CodeUploadFormat {
		t.Errorf("not an image: code %d", code)
	}
	if code, _ := file("stream", "empty.txt", nil); code != fakelark.CodeUploadEmpty {
		t.Errorf("empty file: code %d", code)
	}
	if code, _ := file("zip", "a.zip", []byte("PK")); code != fakelark.CodeUploadParam {
		t.Errorf("file_type zip: code %d", code)
	}
	code, pdf := file("pdf", "a.pdf", []byte("%PDF"))
	if code != 0 || pdf == "" {
		t.Fatalf("pdf upload: code %d", code)
	}
	if r := createMsg(t, cli, "oc_u", "image", `{"image_key":"`+key+`"}`); r.Code != 0 {
		t.Errorf("image message: code %d %s", r.Code, r.Msg)
	}
	if r := createMsg(t, cli, "oc_u", "media", `{"file_key":"`+pdf+`"}`); r.Code == 0 {
		t.Error("a PDF went as a video (media)")
	}
	if r := createMsg(t, cli, "oc_u", "image", `{"image_key":"img_never_uploaded"}`); r.Code == 0 {
		t.Error("an image message with an unknown key went")
	}
}

// Cards are checked as the card service checks them; what they show is
// drawn, Feishu's tags taking effect.
func TestCardsAreValidatedAndDrawn(t *testing.T) {
	s := start(t, fakelark.Options{})
	cli := client(s)
	for name, card := range map[string]string{
		"action module in 2.0":     `{"schema":"2.0","body":{"elements":[{"tag":"action","actions":[]}]}}`,
		"no body in 2.0":           `{"schema":"2.0","elements":[{"tag":"markdown","content":"x"}]}`,
		"unknown schema":           `{"schema":"3.0","body":{"elements":[]}}`,
		"markdown without content": `{"schema":"2.0","body":{"elements":[{"tag":"markdown"}]}}`,
	} {
		if r := createMsg(t, cli, "oc_c", "interactive", card); r.Code != fakelark.CodeBadCard || !strings.Contains(r.Msg, "ErrCode") {
			t.Errorf("%s: code %d %q, want %d", name, r.Code, r.Msg, fakelark.CodeBadCard)
		}
	}
	md := "**hi** <at id=all></at> &lt;at id=all&gt;"
	if r := createMsg(t, cli, "oc_c", "interactive", `{"schema":"2.0","body":{"elements":[{"tag":"markdown","content":"`+md+`"}]}}`); r.Code != 0 {
		t.Fatalf("valid card: %d %s", r.Code, r.Msg)
	}
	got := s.Sent()[0].Rendered
	if got.Text != "hi @all <at id=all>" || len(got.Mentions) != 1 || got.Mentions[0] != "all" {
		t.Errorf("drawn %s, want a mention of all and the escaped tag as text", got)
	}
}
