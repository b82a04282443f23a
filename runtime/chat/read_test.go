package chat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRecentEdgeCases(t *testing.T) {
	s := openTestStore(t, StoreOptions{})
	ctx := context.Background()
	for _, text := range []string{"one", "two", "three"} {
		mustAppend(t, s, userEntry(topicKey, text))
	}
	for _, n := range []int{0, -1} {
		if got := mustRecent(t, s, topicKey, n); got == nil || len(got) != 0 {
			t.Errorf("Recent(n=%d) = %v, want empty", n, got)
		}
	}
	if got := mustRecent(t, s, "telegram:chat:never", 10); got == nil || len(got) != 0 {
		t.Errorf("Recent of a missing chat = %v, want empty", got)
	}
	if got := texts(mustRecent(t, s, topicKey, 2)); !slices.Equal(got, []string{"two", "three"}) {
		t.Errorf("Recent(2) = %q", got)
	}
	if got := texts(mustRecent(t, s, topicKey, 10)); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Errorf("Recent(10) = %q", got)
	}
	if _, err := s.Recent(ctx, "", 10); !errors.Is(err, ErrInvalidChatKey) {
		t.Errorf("Recent with empty key: %v, want ErrInvalidChatKey", err)
	}
	if _, err := s.Search(ctx, topicKey, "", 10); !errors.Is(err, ErrEmptyKeyword) {
		t.Errorf("Search with empty keyword: %v, want ErrEmptyKeyword", err)
	}
	if got, err := s.Search(ctx, topicKey, "one", 0); err != nil || len(got) != 0 {
		t.Errorf("Search with limit 0 = %v, %v; want empty", got, err)
	}
}

func TestTornLastLine(t *testing.T) {
	for _, torn := range []string{
		`{"v":1,"ts":2,"channel":"telegram","chatKey":"` + topicKey + `","role":"user","text":"half`,
		// A line complete but for its '\n' is a write in progress until the
		// next append ends it; from then on it is an entry like any other.
		`{"v":1,"ts":2,"channel":"telegram","chatKey":"` + topicKey + `","role":"user","text":"whole"}`,
	} {
		dir := t.TempDir()
		good := `{"v":1,"ts":1,"channel":"telegram","chatKey":"` + topicKey + `","role":"user","text":"good"}` + "\n"
		path := filepath.Join(dir, "telegram_chat_-100123_topic_42.jsonl")
		if err := os.WriteFile(path, []byte(good+torn), 0o600); err != nil {
			t.Fatal(err)
		}
		s := openTestStore(t, StoreOptions{Dir: dir})
		if got := texts(mustRecent(t, s, topicKey, 10)); !slices.Equal(got, []string{"good"}) {
			t.Fatalf("before append, Recent = %q, want [good]", got)
		}
		mustAppend(t, s, userEntry(topicKey, "new"))

		want := []string{"good", "new"}
		if strings.HasSuffix(torn, "}") {
			want = []string{"good", "whole", "new"}
		}
		if got := texts(mustRecent(t, s, topicKey, 10)); !slices.Equal(got, want) {
			t.Fatalf("Recent = %q, want %q", got, want)
		}
		if got := texts(mustScan(t, s, topicKey)); !slices.Equal(got, want) {
			t.Fatalf("Scan = %q, want %q", got, want)
		}
		found, err := s.Search(context.Background(), topicKey, "NEW", 10)
		if err != nil || len(found) != 1 || found[0].Text != "new" {
			t.Fatalf("Search(NEW) = %v, %v", found, err)
		}
		lines := rawLines(t, path)
		if len(lines) != 3 || lines[1] != torn {
			t.Fatalf("file lines = %q, want the torn line kept on its own", lines)
		}
	}
}

func TestRecentAcrossArchives(t *testing.T) {
	for _, block := range []int{readBlockSize, 64, 7} {
		t.Run(fmt.Sprintf("block=%d", block), func(t *testing.T) {
			dir := t.TempDir()
			s := openTestStore(t, StoreOptions{Dir: dir, SegmentBytes: 1024})
			s.blockSize = block
			var want []string
			for i := range 200 {
				want = append(want, fmt.Sprintf("message %03d", i))
				mustAppend(t, s, userEntry(topicKey, want[i]))
			}
			stem, _ := EscapeChatKey(topicKey)
			archives, _ := filepath.Glob(filepath.Join(dir, stem+".*.jsonl"))
			if len(archives) < 10 {
				t.Fatalf("only %d archives after 200 entries with 1 KiB segments", len(archives))
			}
			for _, n := range []int{1, 30, 99, 150, 200, 1000} {
				got := texts(mustRecent(t, s, topicKey, n))
				if !slices.Equal(got, want[max(0, 200-n):]) {
					t.Fatalf("Recent(%d) = %q", n, got)
				}
			}
			if got := texts(mustScan(t, s, topicKey)); !slices.Equal(got, want) {
				t.Fatalf("Scan = %q", got)
			}
		})
	}
}

func TestScanStops(t *testing.T) {
	s := openTestStore(t, StoreOptions{SegmentBytes: 300})
	for i := range 20 {
		mustAppend(t, s, userEntry(topicKey, fmt.Sprint(i)))
	}
	var got []string
	err := s.Scan(context.Background(), topicKey, func(e ChatLogEntryV1) bool {
		got = append(got, e.Text)
		return len(got) < 5
	})
	if err != nil || !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("Scan = %q, %v", got, err)
	}
	if err := s.Scan(context.Background(), "api:chat:none", func(ChatLogEntryV1) bool { return true }); err != nil {
		t.Fatalf("Scan of a missing chat: %v", err)
	}
}

func TestBackwardLinesMatchesForward(t *testing.T) {
	inputs := []string{
		"", "\n", "a", "a\n", "a\nb", "a\n\nb\n", "\n\n\n", "one\ntwo\nthree\n",
		strings.Repeat("x", 300) + "\n" + strings.Repeat("y", 5) + "\n" + strings.Repeat("z", 200),
	}
	for _, in := range inputs {
		want := completeLines(in)
		slices.Reverse(want)
		for _, block := range []int{1, 2, 3, 7, 64, readBlockSize} {
			got := backwardAll(t, []byte(in), block)
			if !slices.Equal(got, want) {
				t.Errorf("block %d, input %q: lines %q, want %q", block, in, got, want)
			}
		}
	}
}

// completeLines splits s into the lines that end in '\n'.
func completeLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	var out []string
	for _, l := range lines {
		if strings.HasSuffix(l, "\n") {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

func backwardAll(t testing.TB, data []byte, block int) []string {
	lines := newBackwardLines(bytes.NewReader(data), int64(len(data)), block)
	var out []string
	for {
		line, err := lines.prev(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("prev: %v", err)
		}
		out = append(out, string(line))
	}
}

type countingReaderAt struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.read += int64(len(p))
	return c.r.ReadAt(p, off)
}

func TestBackwardLinesReadsOnlyTheTail(t *testing.T) {
	var buf bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&buf, "line %d of a file far larger than one block\n", i)
	}
	r := &countingReaderAt{r: bytes.NewReader(buf.Bytes())}
	lines := newBackwardLines(r, int64(buf.Len()), 4096)
	for range 30 {
		if _, err := lines.prev(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if r.read > 2*4096 {
		t.Fatalf("reading 30 lines of a %d-byte file read %d bytes", buf.Len(), r.read)
	}
}

func TestReadersHonourCancelledContext(t *testing.T) {
	s := openTestStore(t, StoreOptions{SegmentBytes: 256})
	for i := range 20 {
		mustAppend(t, s, userEntry(topicKey, fmt.Sprint("entry ", i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errRecent := s.Recent(ctx, topicKey, 10)
	_, errSearch := s.Search(ctx, topicKey, "entry", 10)
	errScan := s.Scan(ctx, topicKey, func(ChatLogEntryV1) bool { return true })
	_, errAppend := s.Append(ctx, userEntry(topicKey, "late"))
	_, errKeys := s.ChatKeys(ctx)
	for i, err := range []error{errRecent, errSearch, errScan, errAppend, errKeys} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("call %d: error %v, want context.Canceled", i, err)
		}
	}
	if got := mustRecent(t, s, topicKey, 100); len(got) != 20 {
		t.Fatalf("%d entries after a cancelled append, want 20", len(got))
	}
}

// FuzzReadLines feeds arbitrary bytes to the readers as a live file and as
// an archive: they must not panic, must return only valid entries, and must
// agree with each other.
func FuzzReadLines(f *testing.F) {
	valid := `{"v":1,"ts":1,"channel":"api","chatKey":"api:chat:f","role":"user","text":"Hello"}`
	f.Add([]byte(valid+"\n"), []byte(valid+"\n"+valid), uint8(0))
	f.Add([]byte("garbage\n\n{}\nnull\n"+valid+"\n{\"v\":2}\n"), []byte{}, uint8(3))
	f.Add([]byte(`{"v":1,"role":"tool","text":"\u0048i \"x\" a\/b"}`+"\n"+`{"v":1,"role":"user","text":`), []byte("\n\n"), uint8(1))
	f.Add([]byte(strings.Repeat("x", 100)+"\n"+valid+"\n"), []byte("\xff\xfe\n"+valid+"\n"), uint8(7))
	f.Fuzz(func(t *testing.T, live, archive []byte, block uint8) {
		dir := t.TempDir()
		key := "api:chat:f"
		if err := os.WriteFile(filepath.Join(dir, "api_chat_f.jsonl"), live, 0o600); err != nil {
			t.Fatal(err)
		}
		if len(archive) > 0 {
			if err := os.WriteFile(filepath.Join(dir, "api_chat_f.000001.jsonl"), archive, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s := openTestStore(t, StoreOptions{Dir: dir})
		s.blockSize = 1 + int(block)%16

		all := mustScan(t, s, key)
		for _, e := range all {
			if e.V != 1 || !knownRole(e.Role) {
				t.Fatalf("Scan returned an invalid entry %+v", e)
			}
		}
		recent := mustRecent(t, s, key, len(all)+1)
		if !slices.EqualFunc(recent, all, sameEntry) {
			t.Fatalf("Recent = %+v, Scan = %+v", recent, all)
		}
		if len(all) > 0 {
			if last := mustRecent(t, s, key, 1); len(last) != 1 || !sameEntry(last[0], all[len(all)-1]) {
				t.Fatalf("Recent(1) = %+v, want the last of %+v", last, all)
			}
		}
		for _, keyword := range []string{"h", "İ", "\"", "/", "世", "ü", "e世"} {
			found, err := s.Search(context.Background(), key, keyword, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var want []ChatLogEntryV1
			for _, e := range slices.Backward(all) {
				if strings.Contains(strings.ToLower(e.Text), strings.ToLower(keyword)) {
					want = append(want, e)
				}
			}
			if !slices.EqualFunc(found, want, sameEntry) {
				t.Fatalf("Search(%q) = %+v, want %+v", keyword, found, want)
			}
		}
	})
}

func sameEntry(a, b ChatLogEntryV1) bool {
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}
