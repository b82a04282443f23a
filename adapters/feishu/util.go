package feishu

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	"github.com/larksuite/oapi-sdk-go/v3/core/httpserverext"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	"github.com/rs/zerolog"
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
