package qq

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// MeterWith implements adapters.Metered: the bot API calls are counted by
// m from now on. Call it before Run.
func (a *Adapter) MeterWith(m adapters.Meter) { a.opts.Meter = m }

// count tells the meter how one attempt of a call went: 429 and other
// HTTP statuses as QQ answered them, else QQ's code from the body (HTTP
// 4xx answers carry one, bot.q.qq.com "错误码"), "network" when no answer
// came. A call cut short by its own context is not counted.
func (a *Adapter) count(ctx context.Context, method string, err error) {
	if a.opts.Meter == nil || ctx.Err() != nil {
		return
	}
	code := adapters.CodeOK
	var ae *APIError
	switch {
	case err == nil:
	case !errors.As(err, &ae):
		code = adapters.CodeNetwork
	case ae.HTTPStatus == http.StatusTooManyRequests || ae.Code == 0:
		code = strconv.Itoa(ae.HTTPStatus)
	default:
		code = strconv.Itoa(ae.Code)
	}
	a.opts.Meter.PlatformCall(chat.ChannelQQ, method, code)
}
