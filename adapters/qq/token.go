package qq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/shipmyagent/ship/adapters"
)

// Token timing. QQ hands out a new access token only in the last 60 s of
// the current one (before that it returns the current one again), so the
// refresh happens inside that window.
const (
	refreshMargin = 50 * time.Second // refresh this long before expiry...
	minRefresh    = 100 * time.Millisecond
	expirySafety  = 5 * time.Second // ...and never hand out a token this close to it
	tokenType     = "QQBot"         // the Authorization scheme
)

// tokenSource gets QQ access tokens from {TokenBase}/app/getAppAccessToken.
// It is the oauth2.TokenSource botgo's clients ask before every call; it is
// ours rather than botgo's because botgo's cannot drop a token QQ rejected
// (11244), panics after ten failed refreshes, and reads its URL from a
// package variable (its package also does not build with this module's
// go.sum: golang.org/x/sync is missing).
type tokenSource struct {
	appID, secret, url string
	client             *http.Client
	log                zerolog.Logger
	backoff            func(attempt int) time.Duration

	// base bounds every fetch: close cancels it at shutdown, so no fetch
	// outlives the adapter. Concurrent fetches share one request.
	base  context.Context
	close context.CancelFunc
	group singleflight.Group

	mu   sync.Mutex // guards tok and life
	tok  *oauth2.Token
	life time.Duration // expires_in of the current token
}

// tokenError is the token endpoint's refusal.
type tokenError struct {
	status  int
	code    int
	message string
}

func (e *tokenError) Error() string {
	return fmt.Sprintf("qq token endpoint: HTTP %d, code %d: %s", e.status, e.code, e.message)
}

func newTokenSource(appID, secret, base string, client *http.Client, log zerolog.Logger, backoff func(int) time.Duration) *tokenSource {
	ctx, cancel := context.WithCancel(context.Background())
	return &tokenSource{
		appID: appID, secret: secret, url: base + "/app/getAppAccessToken", client: client, log: log, backoff: backoff,
		base: ctx, close: cancel,
	}
}

// Token returns the current token, fetching a new one when there is none or
// it is about to expire. botgo asks it before every call, without a
// context: the fetch ends at the latest when the source is closed.
func (t *tokenSource) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	if t.tok != nil && time.Until(t.tok.Expiry) > min(expirySafety, t.life/4) {
		tok := t.tok
		t.mu.Unlock()
		return tok, nil
	}
	t.mu.Unlock()
	return t.fetch(t.base)
}

// fetch gets a new token from the endpoint and caches it. Callers that
// come while a request is under way share it (singleflight); each stops
// waiting when its own ctx ends.
func (t *tokenSource) fetch(ctx context.Context) (*oauth2.Token, error) {
	ch := t.group.DoChan("token", func() (any, error) { return t.request(t.base) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*oauth2.Token), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("qq token request: %w", ctx.Err())
	}
}

// invalidate drops the cached token after QQ rejected it, so the next call
// fetches one.
func (t *tokenSource) invalidate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tok = nil
}

// first gets the first token, retrying network trouble and server errors
// with backoff until ctx ends. Credentials QQ rejects are final.
func (t *tokenSource) first(ctx context.Context, retrying func(error)) error {
	for attempt := 0; ; attempt++ {
		_, err := t.fetch(ctx)
		if err == nil {
			return nil
		}
		var te *tokenError
		if errors.As(err, &te) && te.status < 500 && te.status != http.StatusTooManyRequests {
			return fmt.Errorf("qq: QQ refused to issue an access token (check QQ_APP_ID, QQ_APP_SECRET and QQ_TOKEN_BASE): %w", err)
		}
		t.log.Warn().Err(err).Msg("getting a qq access token failed; retrying")
		retrying(err)
		if !adapters.SleepCtx(ctx, t.backoff(attempt)) {
			return ctx.Err()
		}
	}
}

// refreshLoop replaces the token shortly before it expires, until ctx ends.
// A failed refresh is logged and retried with backoff; it never stops the
// loop (callers fetch on their own if the token runs out meanwhile).
func (t *tokenSource) refreshLoop(ctx context.Context) {
	for {
		if !adapters.SleepCtx(ctx, t.untilRefresh()) {
			return
		}
		for attempt := 0; ; attempt++ {
			_, err := t.fetch(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			t.log.Warn().Err(err).Int("attempt", attempt+1).Msg("refreshing the qq access token failed; retrying")
			if !adapters.SleepCtx(ctx, t.backoff(attempt)) {
				return
			}
		}
	}
}

// untilRefresh is how long the current token may serve before it is
// replaced: up to refreshMargin (at most half its life) before expiry. The
// floor keeps a refresh that got the same token back (asked too early) from
// turning into a tight loop.
func (t *tokenSource) untilRefresh() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok == nil {
		return minRefresh
	}
	margin := min(refreshMargin, t.life/2)
	floor := min(max(t.life/10, minRefresh), 5*time.Second)
	return max(time.Until(t.tok.Expiry)-margin, floor)
}

// request asks the token endpoint for a token and caches it.
func (t *tokenSource) request(ctx context.Context) (*oauth2.Token, error) {
	body, _ := json.Marshal(map[string]string{"appId": t.appID, "clientSecret": t.secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("qq token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("qq token request: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("qq token response: %w", err)
	}
	var r struct {
		Code        int             `json:"code"`
		Message     string          `json:"message"`
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"` // a string ("7200"), maybe a number
	}
	if err := json.Unmarshal(raw, &r); err != nil || resp.StatusCode/100 != 2 || r.Code != 0 || r.AccessToken == "" {
		msg := r.Message
		if msg == "" {
			msg = "no access_token in the answer"
		}
		return nil, &tokenError{status: resp.StatusCode, code: r.Code, message: msg}
	}
	secs, err := strconv.ParseInt(string(bytes.Trim(r.ExpiresIn, `"`)), 10, 64)
	if err != nil || secs <= 0 {
		return nil, &tokenError{status: resp.StatusCode, message: "expires_in is not a positive number"}
	}
	life := time.Duration(secs) * time.Second
	tok := &oauth2.Token{AccessToken: r.AccessToken, TokenType: tokenType, Expiry: time.Now().Add(life), ExpiresIn: secs}
	t.mu.Lock()
	renewed := t.tok == nil || t.tok.AccessToken != r.AccessToken
	t.tok, t.life = tok, life
	t.mu.Unlock()
	if renewed {
		t.log.Debug().Dur("expiresIn", life).Msg("qq access token renewed")
	}
	return tok, nil
}
