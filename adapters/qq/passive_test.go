package qq

import (
	"errors"
	"testing"
	"time"

	"github.com/tencent-connect/botgo/dto"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

func TestLedgerKeepsQQsPassiveReplyRules(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	l := newLedger(func() time.Time { return now })
	parts := func(n int) func(int) (int, error) { return func(int) (int, error) { return n, nil } }

	l.arrived("g", dto.Timestamp("2026-11-20T17:58:00+08:00")) // two minutes ago
	l.arrived("g", dto.Timestamp("2026-11-20T17:59:59+08:00")) // a re-delivery keeps the first time
	if err := l.claim(kindGroup, "g", false, parts(1)); err != nil {
		t.Fatalf("a reply two minutes after a group message: %v", err)
	}
	if err := l.claim(kindGroup, "g", true, parts(1)); !errors.Is(err, errNoteSkipped) {
		t.Errorf("a busy note after a reply: %v, want it skipped (it would leave the answer 3)", err)
	}
	if err := l.claim(kindGroup, "g", false, parts(4)); err != nil {
		t.Fatalf("4 more replies: %v", err)
	}
	if err := l.claim(kindGroup, "g", false, parts(1)); !errors.Is(err, dispatch.ErrReplyLimit) {
		t.Errorf("a sixth reply: %v, want ErrReplyLimit", err)
	}
	l.release("g", 1)
	if err := l.claim(kindGroup, "g", false, parts(1)); err != nil {
		t.Errorf("a reply given back is free again: %v", err)
	}
	now = now.Add(3*time.Minute + time.Second)
	if err := l.claim(kindGroup, "g", false, parts(1)); !errors.Is(err, dispatch.ErrReplyExpired) {
		t.Errorf("5 minutes and 1 second after: %v, want ErrReplyExpired", err)
	}

	l.arrived("c", "") // no timestamp: now
	if err := l.claim(kindC2C, "c", true, parts(1)); err != nil {
		t.Errorf("a busy note on a fresh C2C message: %v", err)
	}
	now = now.Add(59 * time.Minute)
	if err := l.claim(kindC2C, "c", false, parts(4)); err != nil {
		t.Errorf("the answer 59 minutes after a C2C message: %v", err)
	}
	now = now.Add(2 * time.Minute)
	if err := l.claim(kindC2C, "c", false, parts(1)); !errors.Is(err, dispatch.ErrReplyExpired) {
		t.Errorf("61 minutes after: %v", err)
	}

	// Guild channels: no window or count checked here; QQ's answer decides,
	// and once it closed the message, later sends fail at once.
	for range 7 {
		if err := l.claim(kindChannel, "ch", true, parts(1)); err != nil {
			t.Fatalf("guild channel: %v", err)
		}
	}
	closed := errors.Join(errors.New("qq said so"), dispatch.ErrReplyExpired)
	l.close("ch", closed)
	if err := l.claim(kindChannel, "ch", false, parts(1)); !errors.Is(err, dispatch.ErrReplyExpired) {
		t.Errorf("after QQ closed it: %v", err)
	}
	if l.nextSeq("") != 0 || l.nextSeq("new") != 1 || l.nextSeq("new") != 2 {
		t.Error("msg_seq counts from 1 per message, 0 for an active message")
	}
}
