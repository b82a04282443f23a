package chat

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	bigChatKey   = "telegram:chat:-100999"
	bigChatLines = 1_000_000
	// needleEvery spaces the lines that the rare-keyword searches find, so
	// those searches read the whole file.
	needleEvery = 100_000
)

// bigChat is a 1,000,000-line chat file built once per test binary run and
// shared by the benchmarks that read it; TestMain removes it.
var bigChat struct {
	once sync.Once
	dir  string
	size int64
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bigChat.dir != "" {
		os.RemoveAll(bigChat.dir)
	}
	os.Exit(code)
}

// bigChatStore opens a store over the big chat, building it on first use.
func bigChatStore(b *testing.B) *Store {
	b.Helper()
	bigChat.once.Do(func() {
		bigChat.dir, bigChat.size, bigChat.err = writeBigChat()
	})
	if bigChat.err != nil {
		b.Fatalf("building the big chat: %v", bigChat.err)
	}
	// One live file, never rolled: Recent must not depend on its size.
	s, err := OpenStore(StoreOptions{Dir: bigChat.dir, Durability: DurabilityNone, SegmentBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// writeBigChat writes valid JSONL directly, which is far faster than a
// million Appends.
func writeBigChat() (dir string, size int64, err error) {
	dir, err = os.MkdirTemp("", "chat-bench-")
	if err != nil {
		return "", 0, err
	}
	stem, err := EscapeChatKey(bigChatKey)
	if err != nil {
		return dir, 0, err
	}
	f, err := os.Create(filepath.Join(dir, liveFileName(stem)))
	if err != nil {
		return dir, 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	for i := range bigChatLines {
		role := RoleUser
		if i%2 == 1 {
			role = RoleAssistant
		}
		line = append(line[:0], `{"v":1,"ts":`...)
		line = strconv.AppendInt(line, 1_700_000_000_000+int64(i)*1000, 10)
		line = append(line, `,"channel":"telegram","chatId":"-100999","chatKey":"`+bigChatKey+`","userId":"4242","messageId":"`...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `","role":"`+role+`","text":"message `...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, ` about the weather, lunch plans and other small talk`...)
		if i%needleEvery == 0 {
			line = append(line, ` with a Needle, some Ünïcode and 你好世界 in it`...)
		}
		line = append(line, "\"}\n"...)
		if _, err := w.Write(line); err != nil {
			return dir, 0, err
		}
		size += int64(len(line))
	}
	if err := w.Flush(); err != nil {
		return dir, 0, err
	}
	return dir, size, f.Close()
}

func BenchmarkAppend(b *testing.B) {
	for _, writers := range []int{1, 16} {
		for _, d := range []Durability{DurabilityAlways, DurabilityNone} {
			b.Run(fmt.Sprintf("writers=%d/durability=%s", writers, d), func(b *testing.B) {
				s, err := OpenStore(StoreOptions{Dir: b.TempDir(), Durability: d})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				e := userEntry(topicKey, "a typical chat message of about a hundred bytes, give or take a few words")
				e.UserID, e.MessageID = "4242", "1234567"
				ctx := context.Background()
				var next atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range writers {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if _, err := s.Append(ctx, e); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

func BenchmarkRecent30(b *testing.B) {
	s := bigChatStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.Recent(ctx, bigChatKey, 30)
		if err != nil || len(got) != 30 {
			b.Fatalf("Recent returned %d entries, %v", len(got), err)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	tests := []struct {
		name    string
		keyword string
		limit   int
		want    int
	}{
		// Ten matches in the whole file: every line is read.
		{"rare", "NEEDLE", 20, bigChatLines / needleEvery},
		// Matches everywhere: stops after the newest 20.
		{"common", "Weather", 20, 20},
		// Non-ASCII: the raw pre-filter uses "code" or the caseless runes.
		{"non-ascii", "üNÏCODE", 20, bigChatLines / needleEvery},
		{"chinese", "世界", 20, bigChatLines / needleEvery},
		// Nothing to pre-filter on: every line is decoded (the worst case).
		{"decode-all", "Ü", 20, bigChatLines / needleEvery},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			s := bigChatStore(b)
			ctx := context.Background()
			if tt.want != 20 {
				b.SetBytes(bigChat.size)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				got, err := s.Search(ctx, bigChatKey, tt.keyword, tt.limit)
				if err != nil || len(got) != tt.want {
					b.Fatalf("Search(%q) returned %d entries, %v; want %d", tt.keyword, len(got), err, tt.want)
				}
			}
		})
	}
}
