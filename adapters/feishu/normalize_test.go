package feishu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

func ptr(s string) *string { return &s }

func testMentions() mentions {
	return newMentions([]*larkim.MentionEvent{
		{Key: ptr("@_user_1"), Id: &larkim.UserId{OpenId: ptr("ou_bot")}, Name: ptr("ship")},
		{Key: ptr("@_user_2"), Id: &larkim.UserId{OpenId: ptr("ou_bob")}, Name: ptr("Bob")},
		{Key: ptr("@_user_10"), Id: &larkim.UserId{OpenId: ptr("ou_eve")}, Name: ptr("Eve")},
	}, "ou_bot")
}

func TestMessageText(t *testing.T) {
	m := testMentions()
	if !m.bot {
		t.Fatal("the bot's mention was not recognised")
	}
	cases := []struct{ typ, content, want string }{
		{"text", `{"text":"@_user_1 hi @_user_2 and @_user_10"}`, "hi @Bob and @Eve"},
		{"text", `{"text":"tell @_user_2, @_user_1 please"}`, "tell @Bob, please"},
		{"text", `{"text":"@_all meeting @_user_7"}`, "@all meeting @_user_7"},
		{"post", `{"zh_cn":{"title":"T","content":[[{"tag":"at","user_id":"@_user_1"},{"tag":"text","text":" look"}]]}}`, "T\nlook"},
		{"post", `{"title":"","content":[[{"tag":"text","text":"code:"}],[{"tag":"code_block","language":"go","text":"x := 1\n"}],[{"tag":"emotion","emoji_type":"SMILE"},{"tag":"a","href":"https://x.y","text":"https://x.y"}]]}`,
			"code:\n\n```go\nx := 1\n```\n\n:SMILE:https://x.y"},
		{"file", `{"file_key":"f","file_name":"report.pdf"}`, "[file message: report.pdf]"},
		{"audio", `{"file_key":"a","duration":2500}`, "[audio message, 3 s, not transcribed]"},
		{"sticker", `{"file_key":"s"}`, "[sticker]"},
		{"todo", `{}`, "[todo message]"},
	}
	for _, c := range cases {
		if got := messageText(c.typ, c.content, m); got != c.want {
			t.Errorf("%s %s:\n got %q\nwant %q", c.typ, c.content, got, c.want)
		}
	}
}

func TestUUIDs(t *testing.T) {
	a := uuidFor(kindReply, "om_1", 0, 0)
	if len(a) != 36 || a != uuidFor(kindReply, "om_1", 0, 0) {
		t.Fatalf("uuid %q is not a stable 36-character key", a)
	}
	seen := map[string]bool{a: true}
	for _, u := range []string{
		uuidFor(kindReply, "om_1", 1, 0), uuidFor(kindReply, "om_1", 0, 1),
		uuidFor(kindNote, "om_1", 0, 0), uuidFor(kindReply, "om_2", 0, 0),
	} {
		if seen[u] {
			t.Errorf("uuid %s repeats", u)
		}
		seen[u] = true
	}
	var c replyCounter
	if c.next(kindReply, "om_1") != 0 || c.next(kindReply, "om_1") != 1 || c.next(kindNote, "om_1") != 0 {
		t.Error("reply counter")
	}
}

func TestSeenEventsSurviveARestartAndATornLine(t *testing.T) {
	dir := t.TempDir()
	s, err := openSeenEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	if dup, busy := s.claim("ev_1"); dup || busy {
		t.Fatal("a new id is not new")
	}
	if _, busy := s.claim("ev_1"); !busy {
		t.Error("a second delivery in flight is not reported busy")
	}
	if err := s.done("ev_1"); err != nil {
		t.Fatal(err)
	}
	s.claim("ev_2")
	s.release("ev_2") // failed: the next delivery must be handled
	if dup, busy := s.claim("ev_2"); dup || busy {
		t.Error("a released id is not new")
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line.
	f, _ := os.OpenFile(filepath.Join(dir, "events.txt"), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString("ev_3-half")
	_ = f.Close()

	s2, err := openSeenEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	if dup, _ := s2.claim("ev_1"); !dup {
		t.Error("ev_1 forgotten after a restart")
	}
	if dup, _ := s2.claim("ev_2"); dup {
		t.Error("ev_2 was never handled")
	}
	if err := s2.done("ev_4"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "events.txt"))
	if !strings.HasSuffix(string(b), "\nev_4\n") {
		t.Errorf("ev_4 ran into the torn line:\n%s", b)
	}
}
