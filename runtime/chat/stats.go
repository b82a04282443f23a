package chat

import (
	"context"
	"fmt"
)

// ChatStats summarises one chat's log for inspection.
type ChatStats struct {
	// Entries counts complete lines, which are entries but for the rare
	// line a crash tore (not decoded: counting must stay cheap).
	Entries int
	// LastTS is the ts of the newest entry (0 for an empty chat).
	LastTS int64
	// Bytes is the size of the log, archives included.
	Bytes int64
}

// Stats counts a chat's entries without decoding them and reads its newest
// entry from the end of the log.
func (s *Store) Stats(ctx context.Context, chatKey string) (ChatStats, error) {
	stem, err := s.readable(ctx, chatKey)
	if err != nil {
		return ChatStats{}, fmt.Errorf("chat stats: %w", err)
	}
	var st ChatStats
	err = s.walkForward(ctx, stem, func(line []byte) bool {
		st.Entries++
		st.Bytes += int64(len(line)) + 1
		return true
	})
	if err != nil {
		return ChatStats{}, fmt.Errorf("chat stats: %w", err)
	}
	last, err := s.Recent(ctx, chatKey, 1)
	if err != nil {
		return ChatStats{}, fmt.Errorf("chat stats: %w", err)
	}
	if len(last) == 1 {
		st.LastTS = last[0].TS
	}
	return st, nil
}
