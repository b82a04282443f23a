package feishu

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// MeterWith implements adapters.Metered: the open-platform calls are
// counted by m from now on. Call it before Run.
func (a *Adapter) MeterWith(m adapters.Meter) { a.opts.Meter = m }

// count tells the meter how one attempt of a call went. The code is 429
// when the gateway said so (the open platform answers its frequency limit
// with HTTP 429 and code 99991400, open.feishu.cn "频控策略"), else the
// platform's code from the body, else a non-2xx HTTP status, else
// "network" when no answer came. A call cut short by its own context is
// not counted: that is shutdown, not the platform.
func (a *Adapter) count(ctx context.Context, method string, res apiResult, err error) {
	if a.opts.Meter == nil || ctx.Err() != nil {
		return
	}
	code := adapters.CodeOK
	var ce larkcore.CodeError
	switch {
	case err != nil && errors.As(err, &ce):
		code = strconv.Itoa(ce.Code)
	case err != nil:
		code = adapters.CodeNetwork
	case res.status == http.StatusTooManyRequests:
		code = strconv.Itoa(res.status)
	case res.code != 0:
		code = strconv.Itoa(res.code)
	case res.status >= 300:
		code = strconv.Itoa(res.status)
	}
	a.opts.Meter.PlatformCall(chat.ChannelFeishu, method, code)
}
