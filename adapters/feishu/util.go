package feishu

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/core/httpserverext"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
)

// sdkLogger routes the SDK's logs into zerolog. The SDK logs requests,
// frames and reconnects; its Info lines are chatty, so they become Debug.
// Secrets are scrubbed from every line: the SDK formats errors and
// responses we do not control.
type sdkLogger struct {
	log     zerolog.Logger
	secrets []string
}

func newSDKLogger(log zerolog.Logger, secrets ...string) larkcore.Logger {
	return sdkLogger{log: log.With().Str("component", "lark-sdk").Logger(), secrets: secrets}
}

func (l sdkLogger) Debug(_ context.Context, args ...any) { l.emit(l.log.Debug(), args) }
func (l sdkLogger) Info(_ context.Context, args ...any)  { l.emit(l.log.Debug(), args) }
func (l sdkLogger) Warn(_ context.Context, args ...any)  { l.emit(l.log.Warn(), args) }
func (l sdkLogger) Error(_ context.Context, args ...any) { l.emit(l.log.Error(), args) }

func (l sdkLogger) emit(ev *zerolog.Event, args []any) {
	if ev == nil { // level disabled: skip formatting
		return
	}
	ev.Msg(scrubSecrets(strings.TrimSpace(fmt.Sprintln(args...)), l.secrets...))
}

// scrubSecrets replaces every non-empty secret in s.
func scrubSecrets(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// httpserverextHandler is the SDK's webhook handler for d.
func httpserverextHandler(d *dispatcher.EventDispatcher) http.HandlerFunc {
	return httpserverext.NewEventHandlerFunc(d)
}

// background runs the adapter's own short tasks (command answers, busy
// notes) off the event handler, which must return at once, and stops them
// when Run ends.
type background struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
}

func (b *background) init() {
	b.ctx, b.cancel = context.WithCancel(context.Background())
}

// goAfter runs f after d in its own goroutine, unless the adapter stopped.
func (b *background) goAfter(d time.Duration, f func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if d > 0 && !adapters.SleepCtx(b.ctx, d) {
			return
		}
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		f(ctx)
	}()
}

// close cancels the tasks and waits for them.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}
