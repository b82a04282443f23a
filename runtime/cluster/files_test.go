package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/media"
)

// sharedStores are two replicas' file stores, each in its own project
// folder, sharing the ship_files object store.
func sharedStores(t *testing.T) (a, b *media.Store, dirB string) {
	t.Helper()
	na := startNode(t, "a", nil)
	nb := startNode(t, "b", na)
	dirB = t.TempDir()
	return media.NewStore(t.TempDir(), 0, media.WithShared(na.Files())),
		media.NewStore(dirB, 0, media.WithShared(nb.Files())), dirB
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestFileSavedOnOneReplicaIsReadOnAnother(t *testing.T) {
	a, b, dirB := sharedStores(t)
	ctx := testCtx(t)
	photo := append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), bytes.Repeat([]byte("pixels"), 100_000)...) // ~600 KB: several chunks
	f, err := a.Save(ctx, "telegram:chat:42", "7", media.KindImage, "photo.jpg", "image/jpeg", bytes.NewReader(photo))
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Read(ctx, f, media.DefaultMaxFileBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, photo) {
		t.Fatalf("replica b read %d bytes, not the %d saved on a", len(got), len(photo))
	}
	// Fetched once: it is now on b's disk where the path says, and
	// nothing half-written is left beside it.
	onDisk, err := os.ReadFile(filepath.Join(dirB, filepath.FromSlash(f.Path)))
	if err != nil || !bytes.Equal(onDisk, photo) {
		t.Fatalf("b's copy at %s: %d bytes, %v", f.Path, len(onDisk), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dirB, media.Dir, "*", ".fetch-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// Open (the console's way in) fetches as well.
	doc, err := a.Save(ctx, "telegram:chat:42", "8", media.KindFile, "notes.txt", "", strings.NewReader("some notes"))
	if err != nil {
		t.Fatal(err)
	}
	fh, err := b.Open(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if got, err := io.ReadAll(fh); err != nil || string(got) != "some notes" {
		t.Errorf("b.Open read %q, %v", got, err)
	}
}

func TestFileMissingEverywhereIsAClearError(t *testing.T) {
	_, b, _ := sharedStores(t)
	_, err := b.Read(testCtx(t), media.File{Kind: media.KindImage, Path: media.Dir + "/telegram_chat_1/9-gone.jpg"}, 1<<20)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want one wrapping fs.ErrNotExist", err)
	}
	for _, says := range []string{"9-gone.jpg", "other replicas"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("error %q does not mention %q", err, says)
		}
	}
}

func TestFileOverTheReadersCapIsRefusedAndNotKept(t *testing.T) {
	a, b, dirB := sharedStores(t)
	ctx := testCtx(t)
	f, err := a.Save(ctx, "telegram:chat:42", "8", media.KindFile, "big.bin", "", bytes.NewReader(make([]byte, 4096)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(ctx, f, 1000); !errors.Is(err, media.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dirB, media.Dir, "*", "*")); len(left) != 0 {
		t.Errorf("left on b's disk: %v", left)
	}
	// Within the cap it is fetched.
	if got, err := b.Read(ctx, f, 4096); err != nil || len(got) != 4096 {
		t.Errorf("read at the cap: %d bytes, %v", len(got), err)
	}
}

func TestSharedFileNamesCannotEscape(t *testing.T) {
	n := startNode(t, "a", nil)
	ctx := testCtx(t)
	files := n.Files()
	for _, name := range []string{"../ship.json", "c/../../ship.json", "/etc/passwd", "c/./x", "", `c\..\x`, "c//x"} {
		if err := files.Put(ctx, name, strings.NewReader("x")); !errors.Is(err, errBadName) {
			t.Errorf("Put(%q) = %v, want errBadName", name, err)
		}
		if err := files.Get(ctx, name, io.Discard, 100); !errors.Is(err, errBadName) {
			t.Errorf("Get(%q) = %v, want errBadName", name, err)
		}
	}
	// Through the store, a path from a log that climbs out is refused
	// before anything is fetched.
	s := media.NewStore(t.TempDir(), 0, media.WithShared(files))
	if _, err := s.Read(ctx, media.File{Path: media.Dir + "/../../ship.json"}, 100); err == nil {
		t.Error("a path out of the files folder was read")
	}
}

func TestFetchDoesNotFollowASymlinkOutOfTheFolder(t *testing.T) {
	a, b, dirB := sharedStores(t)
	ctx := testCtx(t)
	f, err := a.Save(ctx, "telegram:chat:42", "9", media.KindImage, "p.jpg", "image/jpeg", strings.NewReader("\xff\xd8\xff photo"))
	if err != nil {
		t.Fatal(err)
	}
	// On b, the chat's folder is a symlink to somewhere else.
	outside := t.TempDir()
	chatDir := filepath.Dir(filepath.Join(dirB, filepath.FromSlash(f.Path)))
	if err := os.MkdirAll(filepath.Dir(chatDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, chatDir); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read(ctx, f, 1<<20); err == nil {
		t.Error("read through a symlink out of the files folder")
	}
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Errorf("written outside the files folder: %v", left)
	}
}

// BenchmarkFilePut is the cost a received photo (200 KB, as Telegram
// sends a phone photo) adds on the receiving replica in cluster mode: its
// put into ship_files. R1 is one in-process server; R3 three routed
// servers on loopback.
func BenchmarkFilePut(b *testing.B) {
	for _, copies := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", copies), func(b *testing.B) {
			n := routedNodes(b, copies)[0]
			photo := bytes.Repeat([]byte("p"), 200<<10)
			b.SetBytes(int64(len(photo)))
			for i := 0; b.Loop(); i++ {
				if err := n.Files().Put(context.Background(), fmt.Sprintf("bench/%d", i%64), bytes.NewReader(photo)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFileFetch is the cost on the replica that runs the turn when
// another received the photo: its Get from ship_files.
func BenchmarkFileFetch(b *testing.B) {
	for _, copies := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", copies), func(b *testing.B) {
			ns := routedNodes(b, copies)
			photo := bytes.Repeat([]byte("p"), 200<<10)
			if err := ns[0].Files().Put(context.Background(), "bench/photo", bytes.NewReader(photo)); err != nil {
				b.Fatal(err)
			}
			reader := ns[len(ns)-1].Files()
			b.SetBytes(int64(len(photo)))
			for b.Loop() {
				if err := reader.Get(context.Background(), "bench/photo", io.Discard, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// routedNodes starts n replicas, each with an embedded server routed to
// the others, storing n copies.
func routedNodes(b *testing.B, n int) []*Node {
	b.Helper()
	ports := make([]int, 2*n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	nodes := make([]*Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		e := &Embedded{Listen: fmt.Sprintf("127.0.0.1:%d", ports[2*i]), StoreDir: b.TempDir()}
		if n > 1 {
			e.Cluster = fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])
			for j := range n {
				if j != i {
					e.Routes = append(e.Routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[2*j+1]))
				}
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			nodes[i], errs[i] = Start(ctx, Options{Replica: fmt.Sprintf("r%d", i+1), Replicas: n, Partitions: 4, Embedded: e, Logger: zerolog.Nop()})
		}()
	}
	wg.Wait()
	for i, nd := range nodes {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		b.Cleanup(nd.Close)
	}
	return nodes
}
