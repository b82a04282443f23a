package faketelegram

import (
	"slices"
	"time"
)

// PollGap is a stretch of time during which no getUpdates request was
// being answered: nobody was polling the bot's updates.
type PollGap struct {
	From, To time.Time
}

// Duration is To - From.
func (g PollGap) Duration() time.Duration { return g.To.Sub(g.From) }

// pollBegin and pollEnd bracket every getUpdates request, so that the
// stretches with none in flight can be told (PollGaps).
func (s *Server) pollBegin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.polls == 0 && !s.idleSince.IsZero() {
		s.gaps = append(s.gaps, PollGap{From: s.idleSince, To: time.Now()})
	}
	s.polls++
}

func (s *Server) pollEnd() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.polls--; s.polls == 0 {
		s.idleSince = time.Now()
	}
}

// PollGaps returns, oldest first, every stretch after the first getUpdates
// request during which no getUpdates request was being answered. A stretch
// still open when PollGaps is called ends at that moment. The ordinary
// turnaround between two polls of one client shows as a tiny gap; a bot
// that died, or lost its turn to poll, shows as a long one.
func (s *Server) PollGaps() []PollGap {
	s.mu.Lock()
	defer s.mu.Unlock()
	gaps := slices.Clone(s.gaps)
	if s.polls == 0 && !s.idleSince.IsZero() {
		gaps = append(gaps, PollGap{From: s.idleSince, To: time.Now()})
	}
	return gaps
}

// PollConflicts returns how many getUpdates requests were ended with 409
// "terminated by other getUpdates request": two clients polled at once.
func (s *Server) PollConflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}
