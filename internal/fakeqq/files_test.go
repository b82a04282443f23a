package fakeqq

import (
	"bytes"
	"encoding/base64"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

var testPNG = append([]byte("\x89PNG\r\n\x1a\n"), 1, 2, 3)

func TestUploadsAreCheckedLikeQQ(t *testing.T) {
	s := start(t, Options{})
	auth := token(t, s)
	b64 := base64.StdEncoding.EncodeToString
	for name, tc := range map[string]struct {
		body string
		code int
	}{
		"file type 4 is not open": {`{"file_type":4,"file_data":"` + b64(testPNG) + `","srv_send_msg":false}`, CodeBadRequest},
		"no srv_send_msg":         {`{"file_type":1,"file_data":"` + b64(testPNG) + `"}`, CodeBadRequest},
		"not base64":              {`{"file_type":1,"file_data":"%%%","srv_send_msg":false}`, CodeMediaConvertFail},
		"not a png or jpg":        {`{"file_type":1,"file_data":"` + b64([]byte("GIF89a....")) + `","srv_send_msg":false}`, CodeMediaConvertFail},
		"voice that is not silk":  {`{"file_type":3,"file_data":"` + b64(testPNG) + `","srv_send_msg":false}`, CodeMediaConvertFail},
		"too large": {`{"file_type":1,"file_data":"` + b64(append(append([]byte(nil), testPNG...), make([]byte, MaxInlineMedia)...)) +
			`","srv_send_msg":false}`, CodeFileSize},
	} {
		t.Run(name, func(t *testing.T) {
			if status, out := call(t, http.MethodPost, s.URL()+GroupFilesPath("G"), auth, tc.body); status != http.StatusBadRequest ||
				out["code"] != float64(tc.code) || out["err_code"] != float64(tc.code) {
				t.Errorf("%d %v; want 400 with code %d", status, out, tc.code)
			}
		})
	}
	if len(s.Uploads()) != 0 {
		t.Fatalf("refused uploads were recorded: %+v", s.Uploads())
	}
	status, out := call(t, http.MethodPost, s.URL()+GroupFilesPath("G"), auth, `{"file_type":1,"file_data":"`+b64(testPNG)+`","srv_send_msg":false}`)
	info, _ := out["file_info"].(string)
	if status != http.StatusOK || info == "" || out["file_uuid"] == "" {
		t.Fatalf("upload: %d %v", status, out)
	}
	// send.md: msg_type 7 needs some content; a group's file_info goes
	// only to groups.
	media := `"msg_type":7,"media":{"file_info":"` + info + `"}`
	if _, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth, `{`+media+`}`); out["code"] != float64(CodeEmptyMessage) {
		t.Errorf("media without content: %v", out)
	}
	if _, out := call(t, http.MethodPost, s.URL()+C2CPath("U"), auth, `{"content":" ",`+media+`}`); out["code"] != float64(CodeMediaUploadFail) {
		t.Errorf("a group's file_info to a C2C chat: %v", out)
	}
	if status, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth, `{"content":" ",`+media+`}`); status != http.StatusOK {
		t.Fatalf("media message: %d %v", status, out)
	}
	if sent := s.Sent(); len(sent) != 1 || sent[0].MsgType != 7 || sent[0].Media == nil || !bytes.Equal(sent[0].Media.Bytes, testPNG) {
		t.Errorf("recorded %+v", sent)
	}
}

func TestMarkdownNeedsThePermission(t *testing.T) {
	md := `{"msg_type":2,"markdown":{"content":"**hi**"}}`
	s := start(t, Options{})
	auth := token(t, s)
	if status, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth, md); status != http.StatusBadRequest || out["code"] != float64(CodeMarkdownRefused) {
		t.Errorf("markdown without the permission: %d %v", status, out)
	}
	s = start(t, Options{Markdown: true})
	auth = token(t, s)
	if _, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth, `{"msg_type":2,"markdown":{"content":" "}}`); out["code"] != float64(CodeMarkdownEmpty) {
		t.Errorf("empty markdown: %v", out)
	}
	if status, out := call(t, http.MethodPost, s.URL()+C2CPath("U"), auth, md); status != http.StatusOK {
		t.Fatalf("markdown with the permission: %d %v", status, out)
	}
	if sent := s.Sent(); len(sent) != 1 || sent[0].MsgType != 2 || sent[0].Markdown != "**hi**" {
		t.Errorf("recorded %+v", sent)
	}
}

func TestChannelImagesAreMultipart(t *testing.T) {
	s := start(t, Options{})
	auth := token(t, s)
	post := func(fields map[string]string, image []byte) (int, map[string]any) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		if image != nil {
			fw, _ := mw.CreateFormFile("file_image", "a.png")
			_, _ = fw.Write(image)
		}
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, s.URL()+ChannelPath("C"), &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", auth)
		return do(t, req)
	}
	if _, out := post(map[string]string{"content": "  "}, nil); out["code"] != float64(CodeEmptyMessage) {
		t.Errorf("nothing to send: %v", out)
	}
	if _, out := post(nil, []byte("not an image")); out["code"] != float64(304017) {
		t.Errorf("not an image: %v", out)
	}
	if status, out := post(map[string]string{"content": "a chart"}, testPNG); status != http.StatusOK || out["channel_id"] != "C" {
		t.Fatalf("image: %d %v", status, out)
	}
	if sent := s.Sent(); len(sent) != 1 || !bytes.Equal(sent[0].Image, testPNG) || !strings.Contains(sent[0].Content, "chart") {
		t.Errorf("recorded %+v", sent)
	}
}
