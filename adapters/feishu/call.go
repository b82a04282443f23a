package feishu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/dispatch"
)

// apiError is an answer of the open platform that retrying does not change
// (or that the caller chose not to retry): the code tells callers what
// happened (say, codeMessageGone).
type apiError struct {
	what string
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("feishu %s: %s", e.what, e.msg) }

// codeOf returns the Feishu code of err, 0 when it has none.
func codeOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.code
	}
	return 0
}

// callMode says what call does with answers a retry can fix.
type callMode int

const (
	// retryAll waits and retries rate limits, 5xx and network errors, up to
	// Limits.MaxAttempts, as a send does: for what must get through.
	retryAll callMode = iota
	// retryNone returns them at once as a *dispatch.RetryAfter, so the
	// caller (a stream's Show) waits on its own schedule.
	retryNone
)

// call makes one open-platform call with fn. A refused access token is
// dropped and the call made once more with a fresh one (the SDK keeps the
// bad one, see tokens.go). Refusals come back as *apiError.
func (a *Adapter) call(ctx context.Context, what string, mode callMode,
	fn func(context.Context) (apiResult, error)) (apiResult, error) {
	refreshed := false
	for attempt := 1; ; attempt++ {
		res, err := fn(ctx)
		a.count(ctx, what, res, err)
		var wait time.Duration
		switch classify(res, err) {
		case outcomeOK:
			return res, nil
		case outcomeTokenInvalid:
			if refreshed {
				return res, &apiError{what, res.code, fmt.Sprintf("a fresh access token was refused (code %d): %s", res.code, res.msg)}
			}
			a.log.Info().Int("code", res.code).Str("call", what).Msg("feishu access token rejected; fetching a new one")
			dropTokens(a.opts.AppID)
			refreshed = true
			attempt--
			continue
		case outcomeRateLimited:
			wait = a.rateWait(res, attempt)
		case outcomeTransient:
			wait = adapters.Jitter(a.opts.Limits.RetryBase << min(attempt-1, 10))
		default:
			if err != nil && ctx.Err() != nil {
				return res, fmt.Errorf("feishu %s: %w", what, ctx.Err())
			}
			return res, &apiError{what, res.code, a.failure(res, err)}
		}
		if mode == retryNone {
			// The reset the gateway names, else a second: five times the
			// time between two updates Feishu allows one message.
			wait = time.Second
			if s, perr := strconv.Atoi(res.header.Get(rateResetHeader)); perr == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
			return res, &dispatch.RetryAfter{Wait: min(wait, a.opts.Limits.MaxWait),
				Err: &apiError{what, res.code, a.failure(res, err)}}
		}
		a.log.Warn().Str("call", what).Str("error", a.failure(res, err)).Dur("wait", wait).Msg("feishu call failed; retrying")
		if attempt >= a.opts.Limits.MaxAttempts {
			return res, &apiError{what, res.code, fmt.Sprintf("failed after %d attempts: %s", attempt, a.failure(res, err))}
		}
		if !adapters.SleepCtx(ctx, min(wait, a.opts.Limits.MaxWait)) {
			return res, fmt.Errorf("feishu %s: %w", what, ctx.Err())
		}
	}
}
