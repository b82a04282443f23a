package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
)

// startExportNATS runs an embedded NATS server with JetStream that requires
// token, stopped with the test.
func startExportNATS(t *testing.T, token string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		Authorization: token, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(hangGuard) {
		t.Fatalf("hang guard: NATS not ready after %s", hangGuard)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// TestExportCopiesTheClusterChatLog fills a JetStream chat log as replicas
// would and checks that `ship export` writes each chat's JSONL file as the
// file store would have, refuses a folder with chats in it, and never shows
// the token or a URL password.
func TestExportCopiesTheClusterChatLog(t *testing.T) {
	ctx := context.Background()
	const token = "nats-t0ken-must-not-leak"
	s := startExportNATS(t, token)
	nc, err := nats.Connect(s.ClientURL(), nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	log, err := chatlog.Open(ctx, js, chatlog.Options{Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	want := map[string][]chat.ChatLogEntryV1{}
	keys := []string{"telegram:chat:-100123:topic:7", "api:chat:émile", "qq:group:G1"}
	for i := range 25 {
		key := keys[i%len(keys)]
		e := chat.ChatLogEntryV1{Channel: strings.SplitN(key, ":", 2)[0], ChatID: key, ChatKey: key, UserID: "u1",
			Role: chat.RoleUser, Text: fmt.Sprintf("message %d", i), TS: time.Date(2026, 11, 1, 12, 0, i, 0, time.UTC).UnixMilli()}
		if i%2 == 1 {
			e.Role, e.Meta = chat.RoleAssistant, map[string]any{"model": "fake"}
		}
		got, err := log.Append(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		want[key] = append(want[key], got)
	}

	dir := initProject(t)
	env := append(baseEnv(), "SHIP_NATS_URL="+s.ClientURL(), "SHIP_NATS_TOKEN="+token)
	stdout, stderr, code := runShip(t, env, "export", dir)
	if code != 0 {
		t.Fatalf("ship export: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "Exported 3 chats (25 entries)") {
		t.Fatalf("ship export said %q, want the chats and entries it wrote", stdout)
	}
	if strings.Contains(stdout+stderr, token) {
		t.Fatalf("ship export printed the NATS token:\n%s%s", stdout, stderr)
	}
	chats := filepath.Join(dir, ".ship", "chats")
	files := map[string][]byte{}
	for _, key := range keys {
		stem, _ := chat.EscapeChatKey(key)
		raw, err := os.ReadFile(filepath.Join(chats, stem+".jsonl"))
		if err != nil {
			t.Fatalf("no file for %s: %v", key, err)
		}
		files[key] = raw
		if got := exportedLines(t, raw); !reflect.DeepEqual(got, want[key]) {
			t.Fatalf("%s: exported %+v, want %+v", key, got, want[key])
		}
	}

	// Again into the same folder: refused, nothing changed.
	_, stderr, code = runShip(t, env, "export", dir)
	if code != 1 || !strings.Contains(stderr, "already holds 3 chat log file(s)") {
		t.Fatalf("second ship export: exit %d, stderr %q; want exit 1 and a refusal", code, stderr)
	}
	for key, before := range files {
		stem, _ := chat.EscapeChatKey(key)
		if after, _ := os.ReadFile(filepath.Join(chats, stem+".jsonl")); !bytes.Equal(before, after) {
			t.Fatalf("a refused export changed %s", key)
		}
	}

	// Wrong credentials in the URL: a clear error without the password,
	// and the target folder is not even created.
	out := filepath.Join(t.TempDir(), "elsewhere")
	bad := strings.Replace(s.ClientURL(), "nats://", "nats://admin:hunter2-secret@", 1)
	stdout, stderr, code = runShip(t, baseEnv(), "export", dir, "--nats", bad, "--out", out)
	if code != 1 || !strings.Contains(stderr, "connecting to NATS at") {
		t.Fatalf("export with bad credentials: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout+stderr, "hunter2") {
		t.Fatalf("ship export printed the URL's password: %s", stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a failed export created %s", out)
	}
}

// Without a chat log on the NATS, export says so and creates nothing there
// or on disk.
func TestExportWithoutAChatLog(t *testing.T) {
	s := startExportNATS(t, "")
	dir := initProject(t)
	out := filepath.Join(t.TempDir(), "chats")
	_, stderr, code := runShip(t, baseEnv(), "export", dir, "--nats", s.ClientURL(), "--out", out)
	if code != 1 || !strings.Contains(stderr, "no ship chat log on this NATS") {
		t.Fatalf("export without a chat log: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a failed export created %s", out)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.Stream(context.Background(), chatlog.StreamName); err == nil {
		t.Fatal("export created the chat stream")
	}
	_, stderr, code = runShip(t, baseEnv(), "export", dir)
	if code != 1 || !strings.Contains(stderr, "no NATS to export from") {
		t.Fatalf("export of a project without cluster config: exit %d, stderr %q", code, stderr)
	}
}

func exportedLines(t *testing.T, raw []byte) []chat.ChatLogEntryV1 {
	t.Helper()
	var out []chat.ChatLogEntryV1
	for _, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		var e chat.ChatLogEntryV1
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}
