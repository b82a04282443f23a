package chat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEscapeChatKeyExamples(t *testing.T) {
	tests := []struct{ key, stem string }{
		{"telegram:chat:-100123:topic:42", "telegram_chat_-100123_topic_42"},
		{"feishu:chat:oc_abc:thread:omt_1", "feishu_chat_oc%5Fabc_thread_omt%5F1"},
		{"qq:c2c:E4F4AEA3", "qq_c2c_E4F4AEA3"},
		{"../../etc/passwd", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd"},
		{"a/b", "a%2Fb"},
		{"..", "%2E%2E"},
		{`C:\x`, "C_%5Cx"},
		{"a\x00b", "a%00b"},
		{"100%", "100%25"},
		{"é", "%C3%A9"},
		{"😀", "%F0%9F%98%80"},
		{"a b", "a%20b"},
	}
	for _, tt := range tests {
		stem, err := EscapeChatKey(tt.key)
		if err != nil || stem != tt.stem {
			t.Errorf("EscapeChatKey(%q) = %q, %v; want %q", tt.key, stem, err, tt.stem)
			continue
		}
		key, err := UnescapeChatKey(stem)
		if err != nil || key != tt.key {
			t.Errorf("UnescapeChatKey(%q) = %q, %v; want %q", stem, key, err, tt.key)
		}
	}
}

func TestEscapeChatKeyRejects(t *testing.T) {
	for _, key := range []string{"", "\xff", "a\xc3", strings.Repeat("a", 201), strings.Repeat("é", 34)} {
		if stem, err := EscapeChatKey(key); !errors.Is(err, ErrInvalidChatKey) {
			t.Errorf("EscapeChatKey(%q) = %q, %v; want ErrInvalidChatKey", key, stem, err)
		}
	}
	for _, key := range []string{strings.Repeat("a", 200), strings.Repeat("é", 33) + "ab"} {
		if _, err := EscapeChatKey(key); err != nil {
			t.Errorf("EscapeChatKey of a %d-byte stem: %v", maxStemBytes, err)
		}
	}
}

func TestUnescapeChatKeyRejects(t *testing.T) {
	for _, stem := range []string{
		"", "a%2", "a%", "a%zz", "a%2e", "%41", "%3A", "%2d", "a.b", "a/b", "a b", "a:b", "%FF", "%C3",
		strings.Repeat("a", 201),
	} {
		if key, err := UnescapeChatKey(stem); !errors.Is(err, ErrInvalidChatKey) {
			t.Errorf("UnescapeChatKey(%q) = %q, %v; want ErrInvalidChatKey", stem, key, err)
		}
	}
}

func TestParseFileName(t *testing.T) {
	tests := []struct {
		name string
		stem string
		seq  int
		ok   bool
	}{
		{"telegram_chat_1.jsonl", "telegram_chat_1", 0, true},
		{"telegram_chat_1.000001.jsonl", "telegram_chat_1", 1, true},
		{"telegram_chat_1.123456.jsonl", "telegram_chat_1", 123456, true},
		{"telegram_chat_1.1234567.jsonl", "telegram_chat_1", 1234567, true},
		{"telegram_chat_1.0000001.jsonl", "", 0, false},
		{"telegram_chat_1.000000.jsonl", "", 0, false},
		{"telegram_chat_1.00001.jsonl", "", 0, false},
		{"telegram_chat_1.+00001.jsonl", "", 0, false},
		{"telegram_chat_1.000001.000002.jsonl", "", 0, false},
		{"telegram_chat_1.json", "", 0, false},
		{".jsonl", "", 0, false},
		{"bad%zz.jsonl", "", 0, false},
	}
	for _, tt := range tests {
		stem, seq, ok := parseFileName(tt.name)
		if stem != tt.stem || seq != tt.seq || ok != tt.ok {
			t.Errorf("parseFileName(%q) = %q, %d, %v; want %q, %d, %v", tt.name, stem, seq, ok, tt.stem, tt.seq, tt.ok)
		}
	}
}

// TestChatFilesStayInDir appends to hostile keys and checks that each lands
// in a single file directly inside the chats folder, under its own name.
func TestChatFilesStayInDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "chats")
	s := openTestStore(t, StoreOptions{Dir: dir})
	keys := []string{
		"../../etc/passwd", "a/b", "..", ".", `C:\x`, "nul\x00byte", "😀 emoji:chat", "/abs/path", "~", "CON",
		"a_b", "a:b", "a%3Ab", strings.Repeat("../", 22),
	}
	for _, key := range keys {
		mustAppend(t, s, userEntry(key, "text for "+key))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			t.Fatalf("%s is not a regular file", e.Name())
		}
		if e.Name() != lockFileName {
			names = append(names, e.Name())
		}
	}
	var want []string
	for _, key := range keys {
		stem, err := EscapeChatKey(key)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, liveFileName(stem))
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("files in the chats folder = %q, want %q", names, want)
	}
	if rootEntries, _ := os.ReadDir(root); len(rootEntries) != 1 {
		t.Fatalf("files appeared beside the chats folder: %v", rootEntries)
	}
	got, err := s.ChatKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, slices.Sorted(slices.Values(keys))) {
		t.Fatalf("ChatKeys = %q, want %q", got, keys)
	}
	for _, key := range keys {
		if recent := mustRecent(t, s, key, 5); len(recent) != 1 || recent[0].Text != "text for "+key {
			t.Fatalf("Recent(%q) = %+v", key, recent)
		}
	}
}

func FuzzEscapeChatKey(f *testing.F) {
	for _, seed := range []string{
		"telegram:chat:-100123:topic:42", "../../etc/passwd", "a/b", "..", `C:\x`, "a\x00b", "😀", "%41", "_", "\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		stem, err := EscapeChatKey(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidChatKey) {
				t.Fatalf("EscapeChatKey(%q): error %v does not wrap ErrInvalidChatKey", key, err)
			}
		} else {
			if stem == "" || len(stem) > maxStemBytes || strings.ContainsAny(stem, "/\\.\x00 :") {
				t.Fatalf("EscapeChatKey(%q) = %q: not a safe stem", key, stem)
			}
			back, err := UnescapeChatKey(stem)
			if err != nil || back != key {
				t.Fatalf("UnescapeChatKey(EscapeChatKey(%q)) = %q, %v", key, back, err)
			}
			if gotStem, seq, ok := parseFileName(archiveFileName(stem, 7)); !ok || gotStem != stem || seq != 7 {
				t.Fatalf("archive name of %q parses as %q, %d, %v", stem, gotStem, seq, ok)
			}
			if filepath.Base(liveFileName(stem)) != liveFileName(stem) {
				t.Fatalf("live file name of %q has a directory part", stem)
			}
		}
		// Read as a stem, the input must round-trip too: one spelling per key.
		if back, err := UnescapeChatKey(key); err == nil {
			if again, err := EscapeChatKey(back); err != nil || again != key {
				t.Fatalf("EscapeChatKey(UnescapeChatKey(%q)) = %q, %v", key, again, err)
			}
		}
	})
}
