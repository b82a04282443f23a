package main_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// Sizes of TestE2EClusterPhotos: photos are pushed in batches of
// clusterPhotoBatch chats at once, batch after batch, until at least
// clusterPhotoAway turns ran on a replica other than the one holding the
// Telegram poll (the chats' partitions decide where a turn runs), or
// clusterPhotoMax chats have sent one.
const (
	clusterPhotoBatch = 6
	clusterPhotoAway  = 3
	clusterPhotoMax   = 30
	clusterPhotoGuard = 30 * time.Second // one batch answered
)

// TestE2EClusterPhotos (issue 28) runs three replicas of the real binary
// with embedded NATS routed together, one Telegram fake and one vision
// model fake per replica, so each recorded request tells which replica ran
// the turn. Photos are sent in several private chats; only the poll holder
// receives them (and saves them to its disk), while each turn runs on the
// replica holding its chat's queue partition. Every photo must reach the
// model as an image part with the photo's bytes, including the turns run
// away from the receiver (fetched from the ship_files object store), and
// no replica may log "image not shown to the model".
func TestE2EClusterPhotos(t *testing.T) {
	const token = "4245:e2e-cluster-media-token"
	tg := startTelegram(t, token)

	rs := newReplicas(t, 3, "r", nil)
	fakes := make([]*fakeopenai.Server, len(rs))
	for i := range rs {
		fakes[i] = startFake(t, nil)
	}
	for i, r := range rs {
		r.start(t, modelEnv(fakes[i], append(telegramEnv(tg, token), "LLM_VISION=true", "SHIP_LOG_LEVEL=info")...))
	}

	// Ready: every replica lists the three, each holding some of the
	// queue's partitions, and one of them long-polls Telegram.
	var st clusterStatus
	within(t, clusterReady, "every replica listed with partitions of its own, and a Telegram holder", func() bool {
		for _, r := range rs {
			if r.proc().hasExited() {
				t.Fatalf("%s exited with status %d before it was ready", r.name, r.proc().cmd.ProcessState.ExitCode())
			}
		}
		var ok bool
		if st, ok = rs[0].proc().cluster(); !ok || len(st.Replicas) != len(rs) || st.holder("telegram") == "" {
			return false
		}
		for _, m := range st.Replicas {
			if len(m.Partitions) == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("%+v", st) })
	ctx, cancel := context.WithTimeout(context.Background(), clusterReady)
	defer cancel()
	if err := tg.WaitPolling(ctx); err != nil {
		t.Fatalf("no replica long-polls Telegram: %v", err)
	}
	holder := st.holder("telegram")
	t.Logf("telegram holder %s; partitions %+v", holder, st.Replicas)

	photoOf := func(chat int) []byte { return fmt.Appendf(slices.Clone(jpegBytes), " of chat %d", chat) }
	captionOf := func(chat int) string { return fmt.Sprintf("photo from chat %d", chat) }
	ranOn := map[int]string{} // chat → replica whose model got its turn
	away := 0
	for chats := 0; away < clusterPhotoAway && chats < clusterPhotoMax; {
		first := chats + 1
		for range clusterPhotoBatch {
			chats++
			tg.Push(tg.WithPhoto(tg.PrivateText(int64(1000+chats), fmt.Sprintf("u%d", chats), captionOf(chats)),
				fmt.Sprintf("e2e-cluster-photo-%d", chats), 640, 480, photoOf(chats)))
		}
		bctx, bcancel := context.WithTimeout(context.Background(), clusterPhotoGuard)
		_, err := tg.WaitSent(bctx, chats)
		bcancel()
		if err != nil {
			t.Fatalf("waiting for the replies to %d photos: %v", chats, err)
		}
		for chat := first; chat <= chats; chat++ {
			for i, f := range fakes {
				for _, req := range f.Requests() {
					if !strings.HasSuffix(req.LastUser(), "\n"+captionOf(chat)) {
						continue
					}
					if ranOn[chat] != "" {
						t.Errorf("chat %d's turn reached the model on %s and on %s", chat, ranOn[chat], rs[i].name)
					}
					ranOn[chat] = rs[i].name
					want := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(photoOf(chat))
					if imgs := req.LastUserImages(); len(imgs) != 1 || imgs[0].URL != want {
						t.Errorf("chat %d (run on %s, received on %s): the model got %d image parts, not the photo; text %q",
							chat, rs[i].name, holder, len(imgs), req.LastUser())
					}
				}
			}
			switch ranOn[chat] {
			case "":
				t.Fatalf("chat %d was answered but no model recorded its turn", chat)
			case holder:
			default:
				away++
			}
		}
	}
	t.Logf("turns per chat: %v", ranOn)
	if away < clusterPhotoAway {
		t.Fatalf("only %d of %d turns ran away from the poll holder %s: the test did not cover a fetch", away, len(ranOn), holder)
	}

	for _, r := range rs {
		if code := r.proc().stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("%s exited with status %d", r.name, code)
		}
		if strings.Contains(r.proc().stderr.String(), "image not shown to the model") {
			t.Errorf("%s logged an image not shown to the model", r.name)
		}
	}
}
