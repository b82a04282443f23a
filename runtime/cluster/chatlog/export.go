package chatlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/shipmyagent/ship/runtime/chat"
)

// ErrExportTargetNotEmpty is returned by Export when the file store already
// holds chats: mixing two histories in one file would reorder neither.
var ErrExportTargetNotEmpty = errors.New("the target chats folder already holds chat logs")

// ExportStats counts what Export wrote.
type ExportStats struct {
	Chats, Entries int
}

// Export copies every chat of src into the empty file store dst, in order
// and unchanged (ts kept), so that a project can leave cluster mode with its
// history. Each chat costs one fsync when dst is durable: its entries are
// written deferred and the last one waited for, which covers the others.
// Meta goes through encoding/json as with every reader of the log, so a
// number in it is written back as the float64 it decodes to.
func Export(ctx context.Context, src chat.Log, dst *chat.Store) (ExportStats, error) {
	var st ExportStats
	have, err := dst.ChatKeys(ctx)
	if err != nil {
		return st, fmt.Errorf("export chats: %w", err)
	}
	if len(have) > 0 {
		return st, fmt.Errorf("export chats: %w (%d chats)", ErrExportTargetNotEmpty, len(have))
	}
	keys, err := src.ChatKeys(ctx)
	if err != nil {
		return st, fmt.Errorf("export chats: %w", err)
	}
	for _, key := range keys {
		n, err := exportChat(ctx, src, dst, key)
		st.Entries += n
		if err != nil {
			return st, fmt.Errorf("export chats: %s: %w", key, err)
		}
		if n > 0 {
			st.Chats++
		}
	}
	return st, nil
}

// exportChat copies one chat and returns how many entries it wrote.
func exportChat(ctx context.Context, src chat.Log, dst *chat.Store, key string) (int, error) {
	var (
		n    int
		last *chat.Pending
		werr error
	)
	err := src.Scan(ctx, key, func(e chat.ChatLogEntryV1) bool {
		_, p, err := dst.AppendDeferred(ctx, e)
		if err != nil {
			werr = err
			return false
		}
		if last != nil {
			last.Release()
		}
		last, n = p, n+1
		return true
	})
	if last != nil {
		if err := last.Wait(); err != nil && werr == nil {
			werr = err
		}
	}
	return n, errors.Join(err, werr)
}
