package main

// Graceful drain. The first SIGTERM (or SIGINT) stops intake: the HTTP
// server refuses new work with 503 and Retry-After and /health says
// "draining"; the platforms stop polling and close their websockets
// (Telegram confirms no update it has not logged); the scheduler stops;
// in a cluster the replica leaves the members and hands its idle queue
// partitions to the others at once. Running turns then get
// shutdown.graceSeconds to finish and deliver; what is still queued stays in
// the journal (alone) or the shared queue (cluster) for the next start or
// another replica. A second signal stops at once.

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// httpFinish is how long requests already answered (a run's result being
// written back) get to finish once the engine has closed.
const httpFinish = 5 * time.Second

type hardStopKey struct{}

// stopSignals returns a context that ends at the first SIGINT or SIGTERM;
// the second one ends the context hardStop finds in it, so a person (or a
// service manager) can cut a drain short. stop undoes the signal handling.
func stopSignals(parent context.Context) (ctx context.Context, stop func()) {
	hard, stopHard := context.WithCancel(context.WithoutCancel(parent))
	ctx, cancel := context.WithCancel(context.WithValue(parent, hardStopKey{}, hard))
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for first := true; ; first = false {
			select {
			case <-sig:
			case <-done:
				return
			}
			if !first {
				stopHard()
				return
			}
			cancel()
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
		stopHard()
	}
}

// hardStop is closed by the second stop signal; nil (never) for a context
// not made by stopSignals.
func hardStop(ctx context.Context) <-chan struct{} {
	if h, ok := ctx.Value(hardStopKey{}).(context.Context); ok {
		return h.Done()
	}
	return nil
}

// drain is the graceful shutdown, once ctx (the first signal) has ended.
// stopIntake stops the platforms and the scheduler.
func (r running) drain(ctx context.Context, httpSrv *http.Server, stopIntake func()) error {
	log, grace := r.log, r.cfg.Shutdown.Grace()
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	hard := make(chan struct{})
	go func() {
		select {
		case <-hardStop(ctx):
			log.Warn().Msg("second stop signal: stopping now; unfinished messages stay in the journal for the next start")
			close(hard)
			cancel()
		case <-gctx.Done():
		}
	}()
	r.front.srv.Drain(grace)
	log.Info().Dur("grace", grace).Msg("draining: intake stopped, running turns finish within shutdown.graceSeconds (a second signal stops at once)")
	stopIntake()
	r.rep.drain()

	pending, err := r.eng.Close(gctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		log.Error().Err(err).Msg("closing engine")
	}
	if gctx.Err() != nil && err != nil {
		log.Warn().Msg("running turns cut off (grace over or second signal); they run again at the next start unless a reply already went out")
	}
	if len(pending) > 0 {
		where := "the journal, for the next start"
		if r.rep != nil {
			where = "the shared queue, for another replica"
		}
		log.Info().Int("pending", len(pending)).Str("keptIn", where).Msg("messages not started before the stop are kept")
	}
	// Requests whose run just ended are still writing their answers.
	hctx, hcancel := context.WithTimeout(context.Background(), httpFinish)
	defer hcancel()
	select {
	case <-hard:
		_ = httpSrv.Close()
	default:
		if err := httpSrv.Shutdown(hctx); err != nil {
			log.Warn().Err(err).Msg("http shutdown")
		}
	}
	log.Info().Msg("stopped")
	return nil
}

// drain starts this replica's leaving: it stops announcing itself (the
// others rebalance at once) and hands over its partitions as their items
// here are done, keeping their leases meanwhile (cluster.Queue.Drain).
// Alone, nothing.
func (r *replica) drain() {
	if r == nil || r.cancel == nil {
		return
	}
	r.queue.Drain()
	if r.stopBeat != nil {
		r.stopBeat()
	}
}
