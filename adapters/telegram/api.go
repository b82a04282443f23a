package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/chat"
)

// DefaultAPIBase is the official Bot API server.
const DefaultAPIBase = "https://api.telegram.org"

// api calls the Bot API through tgbotapi. tgbotapi's MakeRequest takes no
// context, so each call gets a BotAPI value whose HTTP transport carries
// the call's context: a shutdown then cancels a held getUpdates at once.
type api struct {
	token string
	base  string // without trailing slash
	http  *http.Client
	// meter counts every call (metrics); set before Run.
	meter adapters.Meter
}

type ctxTransport struct {
	ctx  context.Context
	base http.RoundTripper
}

func (t ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(r.WithContext(t.ctx))
}

func (a *api) bot(ctx context.Context) *tgbotapi.BotAPI {
	rt := a.http.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	b := &tgbotapi.BotAPI{
		Token:  a.token,
		Buffer: 100,
		Client: &http.Client{Transport: ctxTransport{ctx: ctx, base: rt}, Timeout: a.http.Timeout},
	}
	b.SetAPIEndpoint(a.base + "/bot%s/%s")
	return b
}

// call runs one Bot API method. Errors never contain the bot token: the
// http client's errors quote the URL, which carries it.
func (a *api) call(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	resp, err := a.bot(ctx).MakeRequest(method, params)
	a.count(ctx, method, err)
	if err != nil {
		return nil, a.redact(fmt.Errorf("telegram %s: %w", method, err))
	}
	return resp.Result, nil
}

// upload runs one Bot API method with files, as multipart/form-data.
// tgbotapi's UploadFiles leaves the error's Code empty: it is taken from
// the response, so callers tell 429 and 400 apart as for call.
func (a *api) upload(ctx context.Context, method string, params tgbotapi.Params, files []tgbotapi.RequestFile) (json.RawMessage, error) {
	resp, err := a.bot(ctx).UploadFiles(method, params, files)
	if te, ok := apiError(err); ok && te.Code == 0 && resp != nil {
		te.Code = resp.ErrorCode
	}
	a.count(ctx, method, err)
	if err != nil {
		return nil, a.redact(fmt.Errorf("telegram %s: %w", method, err))
	}
	return resp.Result, nil
}

// count tells the meter how a call went: the Bot API's error_code (its
// HTTP status: 429 for flood control, core.telegram.org/bots/api#making-
// requests), "network" when no answer came. A call cut short by its own
// context (a long poll ended at shutdown) is no failure of the platform's
// and is not counted.
func (a *api) count(ctx context.Context, method string, err error) {
	if a.meter == nil || ctx.Err() != nil {
		return
	}
	code := adapters.CodeOK
	if err != nil {
		code = adapters.CodeNetwork
		if te, ok := apiError(err); ok && te.Code != 0 {
			code = strconv.Itoa(te.Code)
		}
	}
	a.meter.PlatformCall(chat.ChannelTelegram, method, code)
}

// redact replaces the token in err's text while keeping errors.As working
// for the *tgbotapi.Error inside.
func (a *api) redact(err error) error {
	if err == nil || a.token == "" || !strings.Contains(err.Error(), a.token) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), a.token, "<bot-token>"), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap gives errors.As the API error; its Message comes from Telegram's
// JSON and never holds the token.
func (e *redactedError) Unwrap() error {
	var te *tgbotapi.Error
	if errors.As(e.err, &te) {
		return te
	}
	var ctxErr error
	switch {
	case errors.Is(e.err, context.Canceled):
		ctxErr = context.Canceled
	case errors.Is(e.err, context.DeadlineExceeded):
		ctxErr = context.DeadlineExceeded
	}
	return ctxErr
}

func (a *api) getMe(ctx context.Context) (tgbotapi.User, error) {
	raw, err := a.call(ctx, "getMe", nil)
	if err != nil {
		return tgbotapi.User{}, err
	}
	var u tgbotapi.User
	if err := json.Unmarshal(raw, &u); err != nil {
		return tgbotapi.User{}, fmt.Errorf("telegram getMe: decoding: %w", err)
	}
	return u, nil
}

// open fetches a file by file_id and returns its body; the caller caps
// what it reads (getFile reports no size for some files). File URLs carry
// the token: errors are redacted.
func (a *api) open(ctx context.Context, fileID string) (io.ReadCloser, error) {
	raw, err := a.call(ctx, "getFile", tgbotapi.Params{"file_id": fileID})
	if err != nil {
		return nil, err
	}
	var f tgbotapi.File
	if err := json.Unmarshal(raw, &f); err != nil || f.FilePath == "" {
		return nil, fmt.Errorf("telegram getFile: no file_path for %s", fileID)
	}
	// tgbotapi builds download URLs from a constant host: build it from
	// the configured base so a self-hosted Bot API server works.
	u := a.base + "/file/bot" + a.token + "/" + strings.TrimPrefix(f.FilePath, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, a.redact(fmt.Errorf("telegram download: %w", err))
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, a.redact(fmt.Errorf("telegram download: %w", err))
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("telegram download: status %d", resp.StatusCode)
	}
	return redactingBody{resp.Body, a}, nil
}

// redactingBody keeps the token out of read errors (they may quote the
// URL).
type redactingBody struct {
	io.ReadCloser
	a *api
}

func (b redactingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = b.a.redact(err)
	}
	return n, err
}

// apiError returns the Bot API error inside err, if any.
func apiError(err error) (*tgbotapi.Error, bool) {
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		return te, true
	}
	return nil, false
}

// MeterWith implements adapters.Metered: the Bot API calls are counted
// by m from now on. Call it before Run.
func (a *Adapter) MeterWith(m adapters.Meter) { a.api.meter = m }
