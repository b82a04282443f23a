package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/internal/fakeqq"
)

// TestE2EFilesQQ: in a QQ group, the model draws a PNG with exec_shell and
// sends it with chat_send_file; the group gets it as rich media (uploaded,
// then a msg_type 7 passive reply to the question), with its caption
// before it as plain text.
func TestE2EFilesQQ(t *testing.T) {
	t.Parallel()
	const (
		appID  = "102030406"
		secret = "e2e-qq-files-secret-never-printed-01"
		// A PNG signature and the start of an IHDR chunk, written with
		// octal escapes any sh's printf knows.
		draw = `printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > chart.png`
	)
	qq, err := fakeqq.Start(fakeqq.Options{AppID: appID, AppSecret: secret, HeartbeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qq.Close)
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		call := func(name string, args map[string]any) fakeopenai.Response {
			b, _ := json.Marshal(args) // a map of strings and slices always encodes
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(b)}}}
		}
		switch len(r.ToolResults()) {
		case 0:
			return call("exec_shell", map[string]any{"command": draw})
		case 1:
			return call("chat_send_file", map[string]any{"paths": []string{"chart.png"}, "caption": "**Your chart**"})
		}
		return fakeopenai.Response{Content: "Sent the **chart**."}
	})
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true}, "allow": ["exec_shell", "chat_send_file"]}`)
	startShip(t, dir, modelEnv(fake,
		"QQ_APP_ID="+appID, "QQ_APP_SECRET="+secret, "QQ_API_BASE="+qq.URL(), "QQ_TOKEN_BASE="+qq.URL()))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := qq.WaitIdentified(ctx, 1); err != nil {
		t.Fatalf("ship never identified on the QQ gateway: %v", err)
	}
	ev := qq.PushGroupAt("G_FILES", "M_FILES", "draw me a chart")
	sent, err := qq.WaitSent(ctx, 2)
	if err != nil {
		t.Fatalf("waiting for the caption and the file: %v (got %+v; tool results %q)", err, sent, toolResults(fake))
	}
	caption, media := sent[0], sent[1]
	if caption.Content != "Your chart" || caption.MsgID != ev.MessageID {
		t.Errorf("caption %+v; want \"Your chart\" replying to %s", caption, ev.MessageID)
	}
	ups := qq.Uploads()
	if len(ups) != 1 || ups[0].Path != fakeqq.GroupFilesPath("G_FILES") || ups[0].FileType != 1 ||
		!bytes.HasPrefix(ups[0].Bytes, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("uploads %+v; want chart.png uploaded to the group as an image", ups)
	}
	if media.MsgType != 7 || media.Media == nil || media.Media.FileInfo != ups[0].FileInfo || media.MsgID != ev.MessageID ||
		media.MsgSeq <= caption.MsgSeq {
		t.Errorf("media message %+v; want msg_type 7 with the upload's file_info, replying to %s after the caption", media, ev.MessageID)
	}
}

// toolResults are the tool results the model was given, for a failure's
// message.
func toolResults(fake *fakeopenai.Server) []string {
	var out []string
	for _, r := range fake.Requests() {
		for _, m := range r.ToolResults() {
			out = append(out, m.Content)
		}
	}
	return out
}
