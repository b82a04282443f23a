package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/cluster/chatlog"
	"github.com/shipmyagent/ship/runtime/config"
)

type exportFlags struct {
	natsURL, out string
}

func newExportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export [dir]",
		Short: "Copy the cluster's chat log from NATS JetStream into .ship/chats (JSONL)",
		Long: `In cluster mode the chat log lives in the JetStream stream SHIP_CHATS. export copies every
chat into the JSONL layout a single ship reads (one <chat>.jsonl per chat, entries unchanged),
so a project can leave cluster mode with its history, or keep a plain-file backup.

NATS is --nats, else cluster.nats.url (SHIP_NATS_URL), else the embedded server's
cluster.nats.embedded.listen of dir/ship.json (that replica must be running); the token is
cluster.nats.token (SHIP_NATS_TOKEN). The target folder must hold no chat logs yet.`,
		Example: `  ship export mybot                              # into mybot/.ship/chats
  ship export mybot --nats nats://10.0.0.2:4222 --out /backup/chats`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(args)
			if err != nil {
				return err
			}
			return runExport(cmd.Context(), cmd.OutOrStdout(), dir, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.natsURL, "nats", "", "NATS server URL(s), comma-separated (default: from the project's cluster config)")
	fl.StringVar(&f.out, "out", "", "chats folder to write (default: dir/.ship/chats); must hold no chat logs")
	return cmd
}

func runExport(ctx context.Context, w io.Writer, dir string, f exportFlags) error {
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return err
	}
	servers := f.natsURL
	if servers == "" {
		servers = cfg.Cluster.NATS.URL
	}
	if servers == "" && cfg.Cluster.NATS.Embedded != nil && cfg.Cluster.NATS.Embedded.Listen != "" {
		servers = "nats://" + cfg.Cluster.NATS.Embedded.Listen
	}
	if servers == "" {
		return errors.New("no NATS to export from: pass --nats nats://host:4222, or set cluster.nats.url (SHIP_NATS_URL) or cluster.nats.embedded.listen in ship.json")
	}
	out := f.out
	if out == "" {
		out = cfg.StatePath("chats")
	}
	// Checked before anything is opened, so a refusal writes nothing (the
	// file store would create the folder and its lock file).
	if n, err := chatFiles(out); err != nil {
		return err
	} else if n > 0 {
		return fmt.Errorf("%s already holds %d chat log file(s): export into an empty folder (--out), or move them away first", out, n)
	}

	shown := config.RedactNATSURL(servers)
	opts := []nats.Option{nats.Name("ship export"), nats.Timeout(10 * time.Second), nats.MaxReconnects(0)}
	if cfg.Cluster.NATS.Token != "" {
		opts = append(opts, nats.Token(cfg.Cluster.NATS.Token))
	}
	nc, err := nats.Connect(servers, opts...)
	if err != nil {
		return fmt.Errorf("connecting to NATS at %s: %w", shown, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("connecting to JetStream at %s: %w", shown, err)
	}
	src, err := chatlog.Open(ctx, js, chatlog.Options{Replicas: cfg.Cluster.NATS.Replicas, MustExist: true})
	if err != nil {
		return fmt.Errorf("opening the chat log at %s: %w", shown, err)
	}
	defer src.Close()
	dst, err := chat.OpenStore(chat.StoreOptions{Dir: out})
	if err != nil {
		return err
	}
	stats, err := chatlog.Export(ctx, src, dst)
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w (%d chats, %d entries written to %s before the error)", err, stats.Chats, stats.Entries, out)
	}
	fmt.Fprintf(w, "Exported %d chats (%d entries) from %s to %s\n", stats.Chats, stats.Entries, shown, out)
	return nil
}

// chatFiles counts the chat log files (*.jsonl) in dir; a missing dir has none.
func chatFiles(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	n := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".jsonl" {
			n++
		}
	}
	return n, nil
}
