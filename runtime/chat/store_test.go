package chat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

const topicKey = "telegram:chat:-100123:topic:42"

// openTestStore opens a store in a fresh folder (unless opts.Dir is set),
// without fsync unless asked, and closes it when the test ends.
func openTestStore(t *testing.T, opts StoreOptions) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Durability == "" {
		opts.Durability = DurabilityNone
	}
	s, err := OpenStore(opts)
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func userEntry(key, text string) ChatLogEntryV1 {
	return ChatLogEntryV1{Channel: ChannelTelegram, ChatID: "-100123", ChatKey: key, Role: RoleUser, Text: text}
}

func mustAppend(t testing.TB, s *Store, e ChatLogEntryV1) ChatLogEntryV1 {
	t.Helper()
	got, err := s.Append(context.Background(), e)
	if err != nil {
		t.Fatalf("Append(%q): %v", e.Text, err)
	}
	return got
}

func mustRecent(t testing.TB, s *Store, key string, n int) []ChatLogEntryV1 {
	t.Helper()
	got, err := s.Recent(context.Background(), key, n)
	if err != nil {
		t.Fatalf("Recent(%q, %d): %v", key, n, err)
	}
	return got
}

func mustScan(t testing.TB, s *Store, key string) []ChatLogEntryV1 {
	t.Helper()
	var got []ChatLogEntryV1
	err := s.Scan(context.Background(), key, func(e ChatLogEntryV1) bool {
		got = append(got, e)
		return true
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", key, err)
	}
	return got
}

func texts(es []ChatLogEntryV1) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Text
	}
	return out
}

// rawLines returns the lines of a file, failing if it does not end in '\n'.
func rawLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func TestAppendWritesContractJSON(t *testing.T) {
	dir := t.TempDir()
	now := time.UnixMilli(1700000000123)
	s := openTestStore(t, StoreOptions{Dir: dir, Now: func() time.Time { return now }})

	in := ChatLogEntryV1{
		V: 7, Channel: ChannelTelegram, ChatID: "-100123", ChatKey: topicKey,
		UserID: "42", MessageID: "777", Role: RoleUser, Text: "hi <b>&</b> \"quoted\"\nsecond line",
		Meta: map[string]any{"username": "ann", "n": 2},
	}
	got := mustAppend(t, s, in)
	if got.V != 1 || got.TS != 1700000000123 {
		t.Fatalf("Append returned v=%d ts=%d, want v=1 ts=1700000000123", got.V, got.TS)
	}

	lines := rawLines(t, filepath.Join(dir, "telegram_chat_-100123_topic_42.jsonl"))
	if len(lines) != 1 {
		t.Fatalf("file has %d lines, want 1", len(lines))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil {
		t.Fatalf("line is not JSON: %v", err)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"channel", "chatId", "chatKey", "messageId", "meta", "role", "text", "ts", "userId", "v"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	for key, value := range map[string]string{
		"v": `1`, "ts": `1700000000123`, "channel": `"telegram"`, "chatId": `"-100123"`,
		"chatKey": `"` + topicKey + `"`, "userId": `"42"`, "messageId": `"777"`, "role": `"user"`,
	} {
		if string(raw[key]) != value {
			t.Errorf("%s = %s, want %s", key, raw[key], value)
		}
	}
	if !strings.Contains(lines[0], `<b>&</b>`) {
		t.Errorf("HTML characters were escaped: %s", lines[0])
	}

	back := mustRecent(t, s, topicKey, 1)
	if len(back) != 1 {
		t.Fatalf("Recent returned %d entries", len(back))
	}
	got.Meta = map[string]any{"username": "ann", "n": float64(2)} // as JSON decodes it
	if !reflect.DeepEqual(back[0], got) {
		t.Fatalf("read back %+v, want %+v", back[0], got)
	}
}

func TestAppendOmitsEmptyOptionalFields(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir})
	mustAppend(t, s, ChatLogEntryV1{TS: 5, Channel: ChannelAPI, ChatID: "default", ChatKey: "api:chat:default", Role: RoleAssistant, Text: ""})
	lines := rawLines(t, filepath.Join(dir, "api_chat_default.jsonl"))
	want := `{"v":1,"ts":5,"channel":"api","chatId":"default","chatKey":"api:chat:default","role":"assistant","text":""}`
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("lines = %q, want [%s]", lines, want)
	}
}

func TestAppendRejectsInvalidEntries(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir})
	good := userEntry("qq:group:G1", "hello")
	tests := []struct {
		name   string
		modify func(*ChatLogEntryV1)
		want   error
	}{
		{"empty chatKey", func(e *ChatLogEntryV1) { e.ChatKey = "" }, ErrInvalidChatKey},
		{"chatKey not UTF-8", func(e *ChatLogEntryV1) { e.ChatKey = "qq:\xff" }, ErrInvalidChatKey},
		{"chatKey too long", func(e *ChatLogEntryV1) { e.ChatKey = strings.Repeat("x", 201) }, ErrInvalidChatKey},
		{"empty role", func(e *ChatLogEntryV1) { e.Role = "" }, ErrInvalidEntry},
		{"unknown role", func(e *ChatLogEntryV1) { e.Role = "developer" }, ErrInvalidEntry},
		{"text not UTF-8", func(e *ChatLogEntryV1) { e.Text = "bad \xc3\x28" }, ErrInvalidEntry},
		{"userId not UTF-8", func(e *ChatLogEntryV1) { e.UserID = "\xfe" }, ErrInvalidEntry},
		{"meta not encodable", func(e *ChatLogEntryV1) { e.Meta = map[string]any{"f": func() {}} }, ErrInvalidEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			tt.modify(&e)
			got, err := s.Append(context.Background(), e)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Append error = %v, want %v", err, tt.want)
			}
			if !reflect.DeepEqual(got, ChatLogEntryV1{}) {
				t.Fatalf("Append returned %+v alongside an error", got)
			}
		})
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != lockFileName {
		t.Fatalf("rejected entries left files behind: %v", names)
	}
}

func TestDurabilityModes(t *testing.T) {
	for _, d := range []Durability{DurabilityAlways, DurabilityNone, ""} {
		t.Run(fmt.Sprintf("durability=%q", d), func(t *testing.T) {
			dir := t.TempDir()
			s, err := OpenStore(StoreOptions{Dir: dir, Durability: d, SegmentBytes: 600})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range 25 {
				want = append(want, fmt.Sprintf("entry %02d", i))
				mustAppend(t, s, userEntry(topicKey, want[i]))
			}
			if got := texts(mustRecent(t, s, topicKey, 100)); !slices.Equal(got, want) {
				t.Fatalf("Recent = %q, want %q", got, want)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := openTestStore(t, StoreOptions{Dir: dir, Durability: d})
			if got := texts(mustRecent(t, s2, topicKey, 100)); !slices.Equal(got, want) {
				t.Fatalf("after reopening, Recent = %q, want %q", got, want)
			}
		})
	}
}

func TestReopenContinuesArchives(t *testing.T) {
	dir := t.TempDir()
	key := "feishu:chat:oc_abc:thread:t1"
	var want []string
	for round := range 3 {
		s, err := OpenStore(StoreOptions{Dir: dir, Durability: DurabilityNone, SegmentBytes: 400})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			want = append(want, fmt.Sprintf("round %d entry %02d", round, i))
			mustAppend(t, s, userEntry(key, want[len(want)-1]))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := openTestStore(t, StoreOptions{Dir: dir})
	if got := texts(mustScan(t, s, key)); !slices.Equal(got, want) {
		t.Fatalf("Scan after reopening = %q, want %q", got, want)
	}
	if got := texts(mustRecent(t, s, key, 1000)); !slices.Equal(got, want) {
		t.Fatalf("Recent after reopening = %q, want %q", got, want)
	}
	// Archives are numbered without gaps from 000001; a reopened store must
	// never reuse (and so overwrite) a number.
	stem, _ := EscapeChatKey(key)
	archives, _ := filepath.Glob(filepath.Join(dir, stem+".*.jsonl"))
	if len(archives) < 3 {
		t.Fatalf("only %d archives; the test needs rolls in every round", len(archives))
	}
	for i, path := range archives {
		if want := filepath.Join(dir, archiveFileName(stem, i+1)); path != want {
			t.Fatalf("archive %d is %s, want %s", i, path, want)
		}
	}
}

func TestLRUEvictionKeepsWorking(t *testing.T) {
	s := openTestStore(t, StoreOptions{MaxOpenFiles: 2})
	var keys []string
	for i := range 10 {
		keys = append(keys, fmt.Sprintf("qq:c2c:user%d", i))
	}
	for round := range 15 {
		for _, key := range keys {
			mustAppend(t, s, userEntry(key, fmt.Sprintf("%s round %d", key, round)))
			if n := openHandles(s); n > 2 {
				t.Fatalf("%d handles open, MaxOpenFiles is 2", n)
			}
		}
	}
	for _, key := range keys {
		got := texts(mustRecent(t, s, key, 100))
		if len(got) != 15 || got[0] != key+" round 0" || got[14] != key+" round 14" {
			t.Fatalf("%s: Recent = %q", key, got)
		}
	}
}

func TestManyChatsKeepMemoryBounded(t *testing.T) {
	s := openTestStore(t, StoreOptions{MaxOpenFiles: 8})
	const chats = 2000
	for i := range chats {
		mustAppend(t, s, userEntry(fmt.Sprintf("telegram:chat:%d", i), "hi"))
	}
	if n := openHandles(s); n > 8 {
		t.Fatalf("%d handles open after %d chats, MaxOpenFiles is 8", n, chats)
	}
	s.mu.Lock()
	indexed, listed := len(s.archives), s.lru.Len()
	s.mu.Unlock()
	if indexed != 0 || listed > 8 {
		t.Fatalf("store keeps state for %d archived stems and %d LRU entries", indexed, listed)
	}
	keys, err := s.ChatKeys(context.Background())
	if err != nil || len(keys) != chats {
		t.Fatalf("ChatKeys returned %d keys, %v", len(keys), err)
	}
}

func openHandles(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files)
}

func TestClosedStore(t *testing.T) {
	s := openTestStore(t, StoreOptions{})
	mustAppend(t, s, userEntry(topicKey, "before close"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	_, errAppend := s.Append(ctx, userEntry(topicKey, "after close"))
	_, errRecent := s.Recent(ctx, topicKey, 1)
	_, errSearch := s.Search(ctx, topicKey, "close", 1)
	errScan := s.Scan(ctx, topicKey, func(ChatLogEntryV1) bool { return true })
	_, errKeys := s.ChatKeys(ctx)
	errClose := s.Close()
	for i, err := range []error{errAppend, errRecent, errSearch, errScan, errKeys, errClose} {
		if !errors.Is(err, ErrStoreClosed) {
			t.Errorf("call %d after Close: error %v, want ErrStoreClosed", i, err)
		}
	}
}

func TestChatKeys(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, StoreOptions{Dir: dir, SegmentBytes: 200})
	keys := []string{"telegram:chat:1", "api:chat:default", "qq:group:ABC", "weird/../key"}
	for _, key := range keys {
		for range 3 {
			mustAppend(t, s, userEntry(key, "some text long enough to roll the segment"))
		}
	}
	// A chat with only archives left still counts.
	stem, _ := EscapeChatKey("telegram:chat:1")
	if err := os.Remove(filepath.Join(dir, liveFileName(stem))); err != nil {
		t.Fatal(err)
	}
	for _, junk := range []string{"notes.txt", "bad%zz.jsonl", "x.12.jsonl", "y.000000.jsonl", ".jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, junk), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ChatKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(keys))
	if !slices.Equal(got, want) {
		t.Fatalf("ChatKeys = %q, want %q", got, want)
	}
}

func TestOpenStoreOptions(t *testing.T) {
	bad := []StoreOptions{
		{},
		{Dir: t.TempDir(), Durability: "sometimes"},
		{Dir: t.TempDir(), SegmentBytes: -1},
		{Dir: t.TempDir(), MaxOpenFiles: -1},
	}
	for _, opts := range bad {
		if s, err := OpenStore(opts); err == nil {
			s.Close()
			t.Errorf("OpenStore(%+v) succeeded", opts)
		}
	}
	nested := filepath.Join(t.TempDir(), ".ship", "chats")
	s := openTestStore(t, StoreOptions{Dir: nested})
	mustAppend(t, s, userEntry(topicKey, "hi"))
	if _, err := os.Stat(filepath.Join(nested, "telegram_chat_-100123_topic_42.jsonl")); err != nil {
		t.Fatalf("chat file not created in the new folder: %v", err)
	}
}

// scanLinesOf checks that every line of every file in dir is a valid entry
// and returns how many there are.
func scanLinesOf(t *testing.T, dir string) int {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if _, ok := DecodeEntry(sc.Bytes()); !ok {
				t.Fatalf("%s: invalid line %q", filepath.Base(path), sc.Text())
			}
			n++
		}
	}
	return n
}

// TestBrokenHandleIsReplaced: after a failed fsync or roll a handle is given
// up on; appends, including ones that already hold it, must carry on with a
// fresh one.
func TestBrokenHandleIsReplaced(t *testing.T) {
	s := openTestStore(t, StoreOptions{})
	mustAppend(t, s, userEntry(topicKey, "one"))
	stem, _ := EscapeChatKey(topicKey)
	held, err := s.acquire(stem)
	if err != nil {
		t.Fatal(err)
	}
	held.broken.Store(true)
	if _, err := s.writeLine(held, []byte("{}\n")); !errors.Is(err, errHandleBroken) {
		t.Fatalf("writing through a broken handle: %v", err)
	}
	mustAppend(t, s, userEntry(topicKey, "two"))
	s.release(held)
	if held.f != nil {
		t.Fatal("the broken handle was not closed once released")
	}
	mustAppend(t, s, userEntry(topicKey, "three"))
	if got := texts(mustScan(t, s, topicKey)); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("Scan = %q", got)
	}
}

func TestSecondStoreOnTheSameFolderIsRefused(t *testing.T) {
	dir := t.TempDir()
	s1, err := OpenStore(StoreOptions{Dir: dir, Durability: DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(StoreOptions{Dir: dir}); !errors.Is(err, ErrStoreLocked) {
		t.Fatalf("second open: %v, want ErrStoreLocked", err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(StoreOptions{Dir: dir})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	keys, err := s2.ChatKeys(context.Background())
	if err != nil || len(keys) != 0 {
		t.Errorf("ChatKeys = %v, %v: the lock file is not a chat", keys, err)
	}
	s2.Close()
}

func TestAppendDeferredIsReadableAtOnceAndWaitsOnce(t *testing.T) {
	for _, d := range []Durability{DurabilityAlways, DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			s, err := OpenStore(StoreOptions{Dir: t.TempDir(), Durability: d, MaxOpenFiles: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, p, err := s.AppendDeferred(ctx, ChatLogEntryV1{Channel: "api", ChatID: "a", ChatKey: "api:chat:a", Role: RoleUser, Text: "question"})
			if err != nil {
				t.Fatal(err)
			}
			// Other chats come and go while it is pending: its handle stays.
			for i := 0; i < 3; i++ {
				if _, err := s.Append(ctx, ChatLogEntryV1{Channel: "api", ChatID: "b", ChatKey: fmt.Sprintf("api:chat:b%d", i), Role: RoleUser, Text: "x"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Append(ctx, ChatLogEntryV1{Channel: "api", ChatID: "a", ChatKey: "api:chat:a", Role: RoleAssistant, Text: "answer"}); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err != nil {
				t.Fatalf("second Wait: %v", err)
			}
			got, err := s.Recent(ctx, "api:chat:a", 10)
			if err != nil || len(got) != 2 || got[0].Text != "question" || got[1].Text != "answer" {
				t.Fatalf("Recent = %+v, %v", got, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
