package chatlog_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

func TestAppendRoundTrip(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{})
	in := chat.ChatLogEntryV1{
		Channel: chat.ChannelTelegram, ChatID: "-100123", ChatKey: "telegram:chat:-100123:topic:7",
		UserID: "42", MessageID: "977", Role: chat.RoleUser, Text: "hello <b>\"world\"</b> & 日本語\n",
		Meta: map[string]any{"replyTo": "12", "files": []any{map[string]any{"name": "a.png", "size": 1234.0}}, "ok": true},
	}
	got, err := st.Append(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.V != 1 || got.TS == 0 {
		t.Fatalf("Append returned v=%d ts=%d, want v=1 and a ts stamped", got.V, got.TS)
	}
	want := in
	want.V, want.TS = 1, got.TS
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Append returned\n%+v\nwant\n%+v", got, want)
	}
	recent, err := st.Recent(ctx, in.ChatKey, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 1 || !reflect.DeepEqual(recent[0], want) {
		t.Fatalf("Recent = %+v, want [%+v]", recent, want)
	}

	// A caller changing what it got must not change what the next reader gets.
	recent[0].Meta["files"].([]any)[0].(map[string]any)["name"] = "changed"
	again, err := st.Recent(ctx, in.ChatKey, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again[0], want) {
		t.Fatalf("Recent after the caller changed its copy = %+v, want %+v", again[0], want)
	}

	// A ts given is kept.
	in.TS = 1_700_000_000_123
	got, err = st.Append(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if recent, _ := st.Recent(ctx, in.ChatKey, 1); got.TS != in.TS || recent[0].TS != in.TS {
		t.Fatalf("ts %d written as %d, read back as %d", in.TS, got.TS, recent[0].TS)
	}
}

func TestRecentOrderAndCount(t *testing.T) {
	ctx := context.Background()
	// A small tail, so reads past it (which stream the chat) are covered too.
	st, s := newStore(t, chatlog.Options{CacheEntries: 5})
	written := appendN(t, st, "api:chat:c1", "m", 40)
	appendN(t, st, "api:chat:other", "x", 3)
	for _, n := range []int{1, 3, 5, 6, 12, 39, 40, 41, 1000} {
		got, err := st.Recent(ctx, "api:chat:c1", n)
		if err != nil {
			t.Fatal(err)
		}
		want := written[max(0, len(written)-n):]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Recent(%d): got %d entries %v, want the last %d", n, len(got), texts(got), len(want))
		}
	}
	// A second store starts cold and loads the chat in one go.
	cold := open(t, connect(t, s), chatlog.Options{})
	got, err := cold.Recent(ctx, "api:chat:c1", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, written) {
		t.Fatalf("cold Recent(100) = %v", texts(got))
	}
	for _, n := range []int{0, -1} {
		if got, err := st.Recent(ctx, "api:chat:c1", n); err != nil || len(got) != 0 {
			t.Fatalf("Recent(%d) = %v, %v; want none", n, got, err)
		}
	}
	if got, err := st.Recent(ctx, "api:chat:never", 10); err != nil || len(got) != 0 {
		t.Fatalf("Recent of a chat with no log = %v, %v; want none and no error", got, err)
	}
}

func TestSearchMatchesFileStore(t *testing.T) {
	ctx := context.Background()
	texts := []string{
		"Hello World", "hello again", "HELLO?", "nothing here", "İstanbul trip", "istanbul", "ISTANBUL",
		"Kelvin 5\u212A", "kayak", "straße", "STRASSE", `say "quoted" \ slash`, "path /usr/bin", "<b>bold</b> & more",
		"日本語のテキスト", "emoji 🎉 party", "tab\there", "line\nbreak", "ΣΊΣΥΦΟΣ", "σίσυφος",
	}
	keywords := []string{"hello", "HeLLo", "istanbul", "i̇stanbul", "k", "\u212A", "straße", "ss", `"quoted"`, `\`, "/usr",
		"<b>", "&", "テキスト", "🎉", "\t", "\n", "σίσυφος", "ΣΊΣΥΦΟΣ", "o", "absent"}
	fs := openFileStore(t)
	whole, _ := newStore(t, chatlog.Options{})               // tail holds the whole chat
	part, _ := newStore(t, chatlog.Options{CacheEntries: 3}) // Search streams the chat
	const key = "telegram:chat:-100123:topic:7"
	for _, text := range texts {
		e := entry(key, text)
		e.TS = 1_700_000_000_000 + int64(len(text))
		for _, log := range []chat.Log{fs, whole, part} {
			if _, err := log.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, kw := range keywords {
		for _, limit := range []int{1, 2, 5, 100} {
			want, err := fs.Search(ctx, key, kw, limit)
			if err != nil {
				t.Fatal(err)
			}
			for name, log := range map[string]chat.Log{"whole tail": whole, "streamed": part} {
				got, err := log.Search(ctx, key, kw, limit)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: Search(%q, %d) = %q, file store: %q", name, kw, limit, textsOf(got), textsOf(want))
				}
			}
		}
	}
	for _, log := range []chat.Log{whole, part} {
		if _, err := log.Search(ctx, key, "", 5); !errors.Is(err, chat.ErrEmptyKeyword) {
			t.Fatalf("Search with an empty keyword: %v, want ErrEmptyKeyword", err)
		}
		if got, err := log.Search(ctx, key, "hello", 0); err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Search with limit 0 = %#v, %v; want an empty list", got, err)
		}
	}
}

func TestStatsMatchFileStore(t *testing.T) {
	ctx := context.Background()
	fs := openFileStore(t)
	st, _ := newStore(t, chatlog.Options{CacheEntries: 4})
	for i := range 30 {
		e := entry("qq:group:g1", strings.Repeat("é", i))
		e.TS = int64(1_700_000_000_000 + i)
		for _, log := range []chat.Log{fs, st} {
			if _, err := log.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, key := range []string{"qq:group:g1", "qq:group:none"} {
		want, err := fs.Stats(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Stats(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("Stats(%s) = %+v, file store %+v", key, got, want)
		}
	}
}

func TestChatKeys(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{})
	fs := openFileStore(t)
	keys := []string{"telegram:chat:-100123:topic:7", "api:chat:日本語", "feishu:chat:oc_a.b*c>d", "qq:c2c:OPENID 1",
		"api:chat:%41", "api:chat:x/../y", "telegram:chat:42"}
	for _, k := range keys {
		for _, log := range []chat.Log{st, fs} {
			if _, err := log.Append(ctx, entry(k, "hi")); err != nil {
				t.Fatalf("Append to %q: %v", k, err)
			}
		}
	}
	got, err := st.ChatKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(keys))
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ChatKeys = %q, want %q", got, want)
	}
	if fromFiles, _ := fs.ChatKeys(ctx); !reflect.DeepEqual(got, fromFiles) {
		t.Fatalf("ChatKeys = %q, file store %q", got, fromFiles)
	}
	for _, k := range keys {
		if r, err := st.Recent(ctx, k, 5); err != nil || len(r) != 1 || r[0].ChatKey != k {
			t.Fatalf("Recent(%q) = %v, %v", k, r, err)
		}
	}
}

func TestInvalidEntriesWriteNothing(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, t.TempDir())
	js := connect(t, s)
	st := open(t, js, chatlog.Options{})
	ok := entry("api:chat:1", "fine")
	for name, tc := range map[string]struct {
		mod  func(*chat.ChatLogEntryV1)
		want error
	}{
		"empty chat key":    {func(e *chat.ChatLogEntryV1) { e.ChatKey = "" }, chat.ErrInvalidChatKey},
		"chat key not utf8": {func(e *chat.ChatLogEntryV1) { e.ChatKey = "api:\xff" }, chat.ErrInvalidChatKey},
		"chat key too long": {func(e *chat.ChatLogEntryV1) { e.ChatKey = strings.Repeat("é", 60) }, chat.ErrInvalidChatKey},
		"unknown role":      {func(e *chat.ChatLogEntryV1) { e.Role = "admin" }, chat.ErrInvalidEntry},
		"text not utf8":     {func(e *chat.ChatLogEntryV1) { e.Text = "a\xffb" }, chat.ErrInvalidEntry},
		"meta not json":     {func(e *chat.ChatLogEntryV1) { e.Meta = map[string]any{"x": math.NaN()} }, chat.ErrInvalidEntry},
	} {
		e := ok
		tc.mod(&e)
		if _, err := st.Append(ctx, e); !errors.Is(err, tc.want) {
			t.Errorf("%s: Append error %v, want %v", name, err, tc.want)
		}
		if _, _, err := st.AppendDeferred(ctx, e); !errors.Is(err, tc.want) {
			t.Errorf("%s: AppendDeferred error %v, want %v", name, err, tc.want)
		}
	}
	if n := streamMsgs(t, js); n != 0 {
		t.Fatalf("the stream holds %d messages after invalid appends only, want 0", n)
	}
	if _, err := st.Recent(ctx, "", 1); !errors.Is(err, chat.ErrInvalidChatKey) {
		t.Fatalf("Recent with an empty key: %v", err)
	}
}

func TestClosedStoreRefusesEverything(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{})
	appendN(t, st, "api:chat:1", "m", 2)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, entry("api:chat:1", "late")); !errors.Is(err, chat.ErrStoreClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, _, err := st.AppendDeferred(ctx, entry("api:chat:1", "late")); !errors.Is(err, chat.ErrStoreClosed) {
		t.Fatalf("AppendDeferred after Close: %v", err)
	}
	if _, err := st.Recent(ctx, "api:chat:1", 1); !errors.Is(err, chat.ErrStoreClosed) {
		t.Fatalf("Recent after Close: %v", err)
	}
	if _, err := st.ChatKeys(ctx); !errors.Is(err, chat.ErrStoreClosed) {
		t.Fatalf("ChatKeys after Close: %v", err)
	}
	if err := st.Close(); !errors.Is(err, chat.ErrStoreClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestAppendDeferred(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{})
	var want []chat.ChatLogEntryV1
	var pending []*chat.Pending
	for i := range 50 {
		e, p, err := st.AppendDeferred(ctx, entry("api:chat:d", "deferred "+string(rune('a'+i%26))))
		if err != nil {
			t.Fatal(err)
		}
		want, pending = append(want, e), append(pending, p)
	}
	for i, p := range pending {
		if i%10 == 9 {
			p.Release() // the ack is not needed; the entry is stored all the same
			continue
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Recent(ctx, "api:chat:d", 100)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after Wait, Recent = %v, want %v", texts(got), texts(want))
	}
}

func TestAppendFailsWhenNATSIsGone(t *testing.T) {
	st, s := newStore(t, chatlog.Options{})
	appendN(t, st, "api:chat:1", "m", 1)
	s.Shutdown()
	s.WaitForShutdown()
	_, err := st.Append(context.Background(), entry("api:chat:1", "lost"))
	if err == nil || !strings.HasPrefix(err.Error(), "append chat entry: ") {
		t.Fatalf("Append with the server gone: %v, want an \"append chat entry: …\" error", err)
	}
	if _, err := st.Recent(context.Background(), "api:chat:1", 1); err == nil {
		t.Fatal("Recent with the server gone succeeded; it cannot know the chat is up to date")
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, t.TempDir())
	js := connect(t, s)
	if _, err := chatlog.Open(ctx, js, chatlog.Options{MustExist: true}); !errors.Is(err, chatlog.ErrNoChatLog) {
		t.Fatalf("Open MustExist without a stream: %v, want ErrNoChatLog", err)
	}
	if _, err := js.Stream(ctx, chatlog.StreamName); err == nil {
		t.Fatal("Open with MustExist created the stream")
	}
	if _, err := chatlog.Open(ctx, js, chatlog.Options{Replicas: 7}); err == nil {
		t.Fatal("Open with 7 replicas succeeded")
	}
	st := open(t, js, chatlog.Options{Replicas: 1})
	appendN(t, st, "api:chat:1", "m", 3)
	again := open(t, js, chatlog.Options{MustExist: true})
	if got, err := again.Recent(ctx, "api:chat:1", 10); err != nil || len(got) != 3 {
		t.Fatalf("Recent through a MustExist store = %v, %v", got, err)
	}
	str, err := js.Stream(ctx, chatlog.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := str.CachedInfo().Config
	if cfg.Subjects[0] != "ship.chat.>" || cfg.MaxAge != 0 || cfg.MaxBytes != -1 || cfg.MaxMsgs != -1 ||
		!cfg.AllowDirect || cfg.Replicas != 1 || cfg.Storage.String() != "File" {
		t.Fatalf("stream config %+v", cfg)
	}
	if subj, err := chatlog.Subject("telegram:chat:-100123:topic:7"); err != nil || subj != "ship.chat.telegram_chat_-100123_topic_7" {
		t.Fatalf("Subject = %q, %v", subj, err)
	}
}

func texts(es []chat.ChatLogEntryV1) []string { return textsOf(es) }

func textsOf(es []chat.ChatLogEntryV1) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
	}
	return out
}
