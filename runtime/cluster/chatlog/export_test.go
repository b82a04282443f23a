package chatlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

func TestExportWritesTheFileLayout(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, chatlog.Options{CacheEntries: 4})
	// The same appends straight into a file store give the files the export
	// must reproduce byte for byte.
	refDir := t.TempDir()
	reference, err := chat.OpenStore(chat.StoreOptions{Dir: refDir})
	if err != nil {
		t.Fatal(err)
	}
	defer reference.Close()
	want := map[string][]chat.ChatLogEntryV1{}
	keys := []string{"telegram:chat:-100123:topic:7", "api:chat:日本語", "feishu:chat:oc_1", "qq:group:G/1"}
	for i := range 60 {
		key := keys[i%len(keys)]
		e := entry(key, "entry "+strings.Repeat("x", i))
		e.Role = []string{chat.RoleUser, chat.RoleAssistant, chat.RoleTool, chat.RoleSystem}[i%4]
		e.TS = int64(1_700_000_000_000 + i*1000)
		if i%5 == 0 {
			e.Meta = map[string]any{"event": "clear", "n": float64(i), "files": []any{"a.png"}}
		}
		got, err := st.Append(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reference.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		want[key] = append(want[key], got)
	}

	dir := filepath.Join(t.TempDir(), "chats")
	dst, err := chat.OpenStore(chat.StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := chatlog.Export(ctx, st, dst)
	if err != nil {
		t.Fatal(err)
	}
	if stats != (chatlog.ExportStats{Chats: 4, Entries: 60}) {
		t.Fatalf("Export stats %+v, want 4 chats and 60 entries", stats)
	}
	for _, key := range keys {
		stem, _ := chat.EscapeChatKey(key)
		raw, err := os.ReadFile(filepath.Join(dir, stem+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeLines(t, raw); !reflect.DeepEqual(got, want[key]) {
			t.Fatalf("%s: exported file holds %v, want %v", key, texts(got), texts(want[key]))
		}
		ref, err := os.ReadFile(filepath.Join(refDir, stem+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(raw, ref) {
			t.Fatalf("%s: exported file differs from the file store's own:\n%s\nvs\n%s", key, raw, ref)
		}
	}

	// Into a folder that already holds chats: refused, nothing written.
	before, _ := os.ReadFile(filepath.Join(dir, "feishu_chat_oc_1.jsonl"))
	if _, err := chatlog.Export(ctx, st, dst); !errors.Is(err, chatlog.ErrExportTargetNotEmpty) {
		t.Fatalf("second Export: %v, want ErrExportTargetNotEmpty", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "feishu_chat_oc_1.jsonl")); !bytes.Equal(before, after) {
		t.Fatal("a refused Export changed a chat file")
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func decodeLines(t *testing.T, raw []byte) []chat.ChatLogEntryV1 {
	t.Helper()
	var out []chat.ChatLogEntryV1
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var e chat.ChatLogEntryV1
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
