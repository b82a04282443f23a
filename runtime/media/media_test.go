package media_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/media"
)

func TestSaveReferencesTheFileUnderTheProject(t *testing.T) {
	dir := t.TempDir()
	s := media.NewStore(dir, 0)
	f, err := s.Save(context.Background(), "qq:group:G/1", "../m1", media.KindImage, "../../evil name.png", "", bytes.NewReader([]byte("\x89PNG\r\n\x1a\n rest")))
	if err != nil {
		t.Fatal(err)
	}
	if f.MIME != "image/png" || f.Bytes != 13 || f.Name != "../../evil name.png" {
		t.Errorf("file %+v", f)
	}
	if !strings.HasPrefix(f.Path, media.Dir+"/") || strings.Contains(f.Path, "..") || strings.Count(f.Path, "/") != 3 {
		t.Fatalf("path %q escapes its chat folder", f.Path)
	}
	b, err := s.Read(context.Background(), f, 100)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("Read = %q, %v", b, err)
	}
	if _, err := s.Read(context.Background(), f, 4); !errors.Is(err, media.ErrTooLarge) {
		t.Errorf("Read over max: %v", err)
	}
	if _, err := s.Read(context.Background(), media.File{Path: ".ship/files/../../ship.json"}, 100); err == nil {
		t.Error("a path out of the files folder was read")
	}
}

func TestSaveRefusesOverTheCapAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := media.NewStore(dir, 8)
	_, err := s.Save(context.Background(), "telegram:chat:1", "5", media.KindFile, "a.bin", "", bytes.NewReader(make([]byte, 9)))
	if !errors.Is(err, media.ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".ship", "files", "*", "*"))
	if len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := s.Save(context.Background(), "telegram:chat:1", "6", media.KindFile, "b.bin", "", bytes.NewReader(make([]byte, 8))); err != nil {
		t.Errorf("exactly the cap: %v", err)
	}
}

func TestPruneDropsOldestFirst(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i, age := range []time.Duration{40 * 24 * time.Hour, 2 * time.Hour, time.Hour} {
		p := filepath.Join(dir, "c", string(rune('a'+i)))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 10), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	if err := media.PruneFiles(dir, 15, 30*24*time.Hour, now); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "c", "*"))
	if len(left) != 1 || filepath.Base(left[0]) != "c" {
		t.Errorf("left %v, want only the newest", left)
	}
}

func TestFilesOfReadsBothShapesOfMetaFiles(t *testing.T) {
	want := []media.File{{Kind: media.KindImage, Path: ".ship/files/c/1-a.png", MIME: "image/png", Bytes: 3, Name: "a.png"}}
	fromLog := map[string]any{}
	if err := json.Unmarshal([]byte(`{"files":[{"kind":"image","path":".ship/files/c/1-a.png","mime":"image/png","bytes":3,"name":"a.png"}]}`), &fromLog); err != nil {
		t.Fatal(err)
	}
	for _, meta := range []map[string]any{{"files": want}, fromLog} {
		got, err := media.FilesOf(meta)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("FilesOf(%v) = %+v, %v", meta, got, err)
		}
	}
	if got, err := media.FilesOf(nil); got != nil || err != nil {
		t.Errorf("no meta: %v, %v", got, err)
	}
	if _, err := media.FilesOf(map[string]any{"files": "not a list"}); err == nil {
		t.Error("a malformed meta.files reads without error")
	}
}

// memShared is a media.Shared in memory; failPut makes every Put fail.
type memShared struct {
	objs    map[string][]byte
	failPut error
}

func (m *memShared) Put(_ context.Context, name string, r io.ReadSeeker) error {
	if m.failPut != nil {
		return m.failPut
	}
	b, err := io.ReadAll(r)
	m.objs[name] = b
	return err
}

func (m *memShared) Get(_ context.Context, name string, w io.Writer, max int64) error {
	b, ok := m.objs[name]
	if !ok {
		return fs.ErrNotExist
	}
	if int64(len(b)) > max {
		return media.ErrTooLarge
	}
	_, err := w.Write(b)
	return err
}

func TestSharedStoreFetchesWhatAnotherProjectSaved(t *testing.T) {
	sh := &memShared{objs: map[string][]byte{}}
	a := media.NewStore(t.TempDir(), 0, media.WithShared(sh))
	b := media.NewStore(t.TempDir(), 0, media.WithShared(sh))
	ctx := context.Background()
	f, err := a.Save(ctx, "telegram:chat:1", "5", media.KindImage, "p.png", "", bytes.NewReader([]byte("\x89PNG\r\n\x1a\n photo")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Read(ctx, f, 100); err != nil || string(got) != "\x89PNG\r\n\x1a\n photo" {
		t.Fatalf("b.Read = %q, %v", got, err)
	}
	if _, err := b.Read(ctx, media.File{Path: media.Dir + "/c/none.png"}, 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing everywhere: %v", err)
	}
}

func TestSaveThatCannotBeSharedFailsAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s := media.NewStore(dir, 0, media.WithShared(&memShared{failPut: errors.New("no JetStream leader")}))
	_, err := s.Save(context.Background(), "telegram:chat:1", "5", media.KindImage, "p.png", "", bytes.NewReader([]byte("x")))
	if err == nil || !strings.Contains(err.Error(), "no JetStream leader") {
		t.Fatalf("err = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".ship", "files", "*", "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestAloneAMissingFileIsNotExist(t *testing.T) {
	s := media.NewStore(t.TempDir(), 0)
	if _, err := s.Read(context.Background(), media.File{Path: media.Dir + "/c/none.png"}, 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
}
