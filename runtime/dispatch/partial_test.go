package dispatch

import "testing"

func TestPartialTextDecodesWhatHasArrived(t *testing.T) {
	full := `{"text":"héllo \"world\"\n\u00e9 \ud83d\ude00 end"}`
	want := "héllo \"world\"\n\u00e9 \U0001F600 end"
	// Every prefix decodes to a prefix of the final text, never garbage.
	for i := 0; i <= len(full); i++ {
		got, ok := PartialText(full[:i])
		if !ok {
			continue
		}
		if len(got) > len(want) || want[:len(got)] != got {
			t.Fatalf("prefix %q decoded to %q, not a prefix of %q", full[:i], got, want)
		}
	}
	if got, _ := PartialText(full); got != want {
		t.Errorf("full: %q, want %q", got, want)
	}
	for _, s := range []string{``, `{`, `{"tex`, `{"text"`, `{"text":`, `{"other":"x"}`} {
		if got, _ := PartialText(s); got != "" {
			t.Errorf("%q decoded to %q", s, got)
		}
	}
}

func FuzzPartialTextField(f *testing.F) {
	f.Add(`{"text":"a\"b\\c\u00e9\ud83d\ude00"}`)
	f.Add(`{"text" : "\u12`)
	f.Add(`{"text":"\`)
	f.Fuzz(func(t *testing.T, s string) {
		PartialText(s) // must not panic on any input
	})
}

func TestReplyTextsRestartDropsTheFailedAttempt(t *testing.T) {
	var r ReplyTexts
	r.Feed(1, 0, ChatSendTool, `{"text":"Hello wor`)
	r.Feed(2, 0, ChatSendTool, `{"text":"other step`)
	r.Restart(1)
	if got, _ := r.Feed(1, 0, ChatSendTool, `{"text":"Go`); got != "Go" {
		t.Errorf("after a restart the reply reads %q, want only the new attempt's %q", got, "Go")
	}
	if got, _ := r.Feed(2, 0, ChatSendTool, `!`); got != "other step!" {
		t.Errorf("another step's reply reads %q, want it kept", got)
	}
}
