package fakeqq

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// testClock is a settable clock for Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func TestReplyWindowsFollowTheFakesClock(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
	s := start(t, Options{Now: clock.now})
	auth := token(t, s)
	group, c2c := s.GroupAt("G", "M", "hi"), s.C2C("U", "hi")
	if ts := group.Data["timestamp"]; ts != "2026-11-20T18:00:00+08:00" {
		t.Errorf("timestamp %v, want the fake's clock in QQ's form", ts)
	}
	reply := func(path, msgID string, seq int) (int, map[string]any) {
		return call(t, http.MethodPost, s.URL()+path, auth, fmt.Sprintf(`{"content":"x","msg_type":0,"msg_id":%q,"msg_seq":%d}`, msgID, seq))
	}

	s.Advance(GroupReplyWindow)
	if status, out := reply(GroupPath("G"), group.MessageID, 1); status != http.StatusOK {
		t.Fatalf("group reply at exactly 5 minutes: %d %v", status, out)
	}
	s.Advance(time.Second)
	status, out := reply(GroupPath("G"), group.MessageID, 2)
	if status != http.StatusBadRequest || out["code"] != float64(CodeMsgIDExpired) || out["err_code"] != float64(CodeMsgIDExpired) || out["trace_id"] == nil {
		t.Errorf("group reply after 5 minutes: %d %v, want 400 with code, err_code and trace_id %d", status, out, CodeMsgIDExpired)
	}
	if status, out := reply(C2CPath("U"), c2c.MessageID, 1); status != http.StatusOK {
		t.Errorf("C2C reply after 5 minutes: %d %v", status, out)
	}
	clock.mu.Lock()
	clock.t = clock.t.Add(C2CReplyWindow)
	clock.mu.Unlock()
	if _, out := reply(C2CPath("U"), c2c.MessageID, 2); out["code"] != float64(CodeMsgIDExpired) {
		t.Errorf("C2C reply after 60 minutes: %v", out)
	}
	if rej := s.Rejected(); len(rej) != 2 || rej[0].Code != CodeMsgIDExpired || rej[1].Path != C2CPath("U") {
		t.Errorf("rejected %+v", rej)
	}
}

func TestAtMostFiveRepliesPerGroupOrC2CMessage(t *testing.T) {
	s := start(t, Options{})
	auth := token(t, s)
	for _, c := range []struct {
		path string
		ev   Event
	}{{GroupPath("G"), s.GroupAt("G", "M", "hi")}, {C2CPath("U"), s.C2C("U", "hi")}} {
		for seq := 1; seq <= MaxReplies+1; seq++ {
			status, out := call(t, http.MethodPost, s.URL()+c.path, auth,
				fmt.Sprintf(`{"content":"part %d","msg_type":0,"msg_id":%q,"msg_seq":%d}`, seq, c.ev.MessageID, seq))
			if seq <= MaxReplies && status != http.StatusOK {
				t.Errorf("%s reply %d: %d %v", c.path, seq, status, out)
			}
			if seq > MaxReplies && (status != http.StatusBadRequest || out["code"] != float64(CodeReplyLimit)) {
				t.Errorf("%s reply %d: %d %v, want %d", c.path, seq, status, out, CodeReplyLimit)
			}
		}
	}
	ch := s.ChannelAt("GU", "C", "U", "hi")
	for seq := 1; seq <= MaxReplies+1; seq++ {
		if status, out := call(t, http.MethodPost, s.URL()+ChannelPath("C"), auth,
			fmt.Sprintf(`{"content":"x","msg_id":%q,"msg_seq":%d}`, ch.MessageID, seq)); status != http.StatusOK {
			t.Errorf("channel reply %d: %d %v (guild channels have no reply cap here)", seq, status, out)
		}
	}
}

func TestLinksAreRefusedWithQQsCodes(t *testing.T) {
	s := start(t, Options{})
	auth := token(t, s)
	ev := s.GroupAt("G", "M", "hi")
	for _, text := range []string{"see https://x.io/a", "example.com", "run 1.sh now", "crawler.py", "邮件a@b.cn谢谢", "http://10.0.0.1/x"} {
		status, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth,
			fmt.Sprintf(`{"content":%q,"msg_type":0,"msg_id":%q,"msg_seq":1}`, text, ev.MessageID))
		if status != http.StatusBadRequest || out["code"] != float64(CodeURLRefused) || out["err_code"] != float64(CodeURLRefused) {
			t.Errorf("%q: %d %v", text, status, out)
		}
	}
	status, out := call(t, http.MethodPost, s.URL()+ChannelPath("C"), auth, `{"content":"see example.com"}`)
	if status != http.StatusForbidden || out["code"] != float64(CodeGuildURL) || out["err_code"] != nil {
		t.Errorf("channel: %d %v", status, out)
	}
	for _, text := range []string{"pi is 3.14", "see example[.]com or hxxps://x[.]io/a", "done."} {
		if len(Links(text)) > 0 {
			t.Errorf("%q: links %q", text, Links(text))
		}
	}
	// A refused message uses up neither its msg_seq nor a reply.
	if status, out := call(t, http.MethodPost, s.URL()+GroupPath("G"), auth,
		fmt.Sprintf(`{"content":"fine","msg_type":0,"msg_id":%q,"msg_seq":1}`, ev.MessageID)); status != http.StatusOK {
		t.Errorf("after refusals: %d %v", status, out)
	}
	if rej := s.Rejected(); len(rej) != 7 || !slices.ContainsFunc(rej, func(r Rejected) bool { return r.Code == CodeGuildURL }) {
		t.Errorf("rejected %+v", rej)
	}
}
