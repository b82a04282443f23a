package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/internal/fakelark"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// TestE2EFilesFeishu: in a Feishu group thread, the model draws a PNG with
// exec_shell and sends it with chat_send_file; the thread gets its caption
// as a formatted card, then the picture as an image message (uploaded
// with the image upload), both replying to the question. Asked how, the
// model answers in Markdown: a card that renders it, with Feishu's own
// markup in it shown as text.
func TestE2EFilesFeishu(t *testing.T) {
	t.Parallel()
	const (
		secret = "e2e-feishu-files-secret-never-printed"
		draw   = `printf '\211PNG\r\n\032\n\000\000\000\rIHDR' > chart.png`
		final  = "Sent the **chart**, drawn with:\n\n```sh\nprintf ... > chart.png\n```\n\n<at id=all></at>"
	)
	lk, err := fakelark.Start(fakelark.Options{AppSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lk.Close)
	fake := startFake(t, func(r fakeopenai.Request) fakeopenai.Response {
		call := func(name string, args map[string]any) fakeopenai.Response {
			b, _ := json.Marshal(args) // a map of strings and slices always encodes
			return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: name, Arguments: string(b)}}}
		}
		if strings.Contains(r.LastUser(), "how did you draw it") {
			if len(r.ToolResults()) > 0 {
				return fakeopenai.Response{}
			}
			return call("chat_send", map[string]any{"text": final})
		}
		switch len(r.ToolResults()) {
		case 0:
			return call("exec_shell", map[string]any{"command": draw})
		case 1:
			return call("chat_send_file", map[string]any{"paths": []string{"chart.png"}, "caption": "**Your chart**"})
		}
		return fakeopenai.Response{}
	})
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true}, "allow": ["exec_shell", "chat_send_file"]}`)
	startShip(t, dir, modelEnv(fake,
		"FEISHU_APP_ID="+lk.AppID(), "FEISHU_APP_SECRET="+secret, "FEISHU_DOMAIN="+lk.URL()))

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := lk.WaitConnected(ctx); err != nil {
		t.Fatalf("ship never opened the Feishu websocket: %v", err)
	}
	ev := lk.GroupText("oc_files_e2e", "ou_ann", "@_user_1 draw me a chart", lk.BotMention("@_user_1")).InThread("omt_files", "om_files_root")
	pushFeishu(ctx, t, lk, ev)
	var shown []fakelark.Shown
	if err := lk.Wait(ctx, func() bool { shown = lk.Chat("oc_files_e2e"); return len(shown) == 2 }); err != nil {
		t.Fatalf("waiting for the caption and the image: %v (chat %+v; tool results %q)", err, shown, toolResults(fake))
	}
	// The model's next reply is Markdown: it arrives as a card that
	// renders it.
	again := lk.GroupText("oc_files_e2e", "ou_ann", "@_user_1 how did you draw it?", lk.BotMention("@_user_1")).InThread("omt_files", "om_files_root")
	pushFeishu(ctx, t, lk, again)
	if err := lk.Wait(ctx, func() bool {
		shown = lk.Chat("oc_files_e2e")
		return len(shown) == 3 && shown[2].Text == "Sent the chart, drawn with:\nprintf ... > chart.png\n<at id=all></at>"
	}); err != nil {
		t.Fatalf("waiting for the formatted reply: %v (chat %+v)", err, shown)
	}
	caption, img, reply := shown[0], shown[1], shown[2]
	for i, m := range shown {
		if want := []string{ev.MessageID, ev.MessageID, again.MessageID}[i]; m.ReplyTo != want || m.ThreadID != "omt_files" {
			t.Errorf("%s message %s replies to %q in thread %q; want %s in omt_files", m.MsgType, m.MessageID, m.ReplyTo, m.ThreadID, want)
		}
	}
	if r := fakelark.RenderCard(caption.Content); caption.MsgType != "interactive" || r.Text != "Your chart" || !slices.Equal(r.Bold, []string{"Your chart"}) {
		t.Errorf("caption %s %s; want a card with \"Your chart\" in bold", caption.MsgType, r)
	}
	ups := lk.Uploads()
	if len(ups) != 1 || ups[0].Kind != "image" || ups[0].Type != "message" || !bytes.HasPrefix(ups[0].Data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("uploads %+v; want chart.png uploaded as a message image", ups)
	}
	var sentImg fakelark.Sent
	for _, s := range lk.Sent() {
		if s.MessageID == img.MessageID {
			sentImg = s
		}
	}
	if img.MsgType != "image" || sentImg.Key != ups[0].Key {
		t.Errorf("image message %+v (key %q); want an image showing %s", img, sentImg.Key, ups[0].Key)
	}
	r := fakelark.RenderCard(reply.Content)
	if reply.MsgType != "interactive" || !slices.Equal(r.Bold, []string{"chart"}) || len(r.CodeBlocks) != 1 || r.CodeBlocks[0].Lang != "sh" {
		t.Errorf("reply %s; want a card with chart in bold and a sh code block", r)
	}
	if len(r.Mentions) != 0 {
		t.Errorf("the model's <at id=all> mentioned %v", r.Mentions)
	}
}
