package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"

	"github.com/shipmyagent/ship/adapters/feishu"
	"github.com/shipmyagent/ship/adapters/qq"
	"github.com/shipmyagent/ship/runtime/config"
)

// quietLark drops the Lark SDK's own log lines: the check's result says
// what matters, and the SDK's lines may quote requests.
type quietLark struct{}

func (quietLark) Debug(context.Context, ...any) {}
func (quietLark) Info(context.Context, ...any)  {}
func (quietLark) Warn(context.Context, ...any)  {}
func (quietLark) Error(context.Context, ...any) {}

// feishuBase is the open-API base URL for FEISHU_DOMAIN, as the adapter
// reads it.
func feishuBase(d string) string {
	switch strings.ToLower(strings.TrimSpace(d)) {
	case "", "feishu":
		return feishu.DomainFeishu
	case "lark", "larksuite":
		return feishu.DomainLark
	}
	return strings.TrimRight(strings.TrimSpace(d), "/")
}

// checkFeishu gets a tenant access token
// (POST /open-apis/auth/v3/tenant_access_token/internal) and the bot's
// info (GET /open-apis/bot/v3/info) with the Lark SDK, as the adapter does,
// its token cache off so that nothing outlives the check.
func checkFeishu(ctx context.Context, fc config.FeishuConfig, client *http.Client) []checkResult {
	base := feishuBase(fc.Domain)
	cli := lark.NewClient(fc.AppID, fc.AppSecret, lark.WithOpenBaseUrl(base), lark.WithHttpClient(client),
		lark.WithEnableTokenCache(false), lark.WithLogger(quietLark{}))
	tok, err := cli.GetTenantAccessTokenBySelfBuiltApp(ctx, &larkcore.SelfBuiltTenantAccessTokenReq{
		AppID: fc.AppID, AppSecret: fc.AppSecret})
	if err != nil {
		return []checkResult{fail("feishu", fmt.Sprintf("cannot reach %s: %v", hostOf(base), transportCause(err)),
			"check this machine's network (and FEISHU_DOMAIN: feishu, lark or a URL)")}
	}
	if tok.Code != 0 || tok.TenantAccessToken == "" {
		return []checkResult{fail("feishu", fmt.Sprintf("FEISHU_APP_ID / FEISHU_APP_SECRET are refused by Feishu (code %d: %s)", tok.Code, tok.Msg),
			"copy the App ID and App Secret again from the developer console (Credentials & Basic Info) into FEISHU_APP_ID and FEISHU_APP_SECRET")}
	}
	out := []checkResult{pass("feishu", "tenant access token issued for app "+fc.AppID)}

	resp, err := cli.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant,
		larkcore.WithTenantAccessToken(tok.TenantAccessToken))
	if err != nil {
		return append(out, fail("feishu bot", "asking for the bot's info: "+transportCause(err).Error(), "run ship doctor again"))
	}
	var info struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			AppName        string `json:"app_name"`
			OpenID         string `json:"open_id"`
			ActivateStatus int    `json:"activate_status"`
		} `json:"bot"`
	}
	if err := json.Unmarshal(resp.RawBody, &info); err != nil || info.Code != 0 {
		return append(out, fail("feishu bot", fmt.Sprintf("no bot info (HTTP %d, code %d: %s)", resp.StatusCode, info.Code, info.Msg),
			"turn on the app's Bot feature (Features → Bot) and publish a version of the app"))
	}
	return append(out, pass("feishu bot", fmt.Sprintf("bot %q (%s)", info.Bot.AppName, info.Bot.OpenID)))
}

// checkQQ gets an app access token (POST {tokenBase}/app/getAppAccessToken)
// and the gateway (GET {apiBase}/gateway/bot). It is plain net/http with
// the adapter's wire format: botgo keeps its base URLs in package
// variables, which a check must not change under a running adapter.
func checkQQ(ctx context.Context, c config.QQConfig, client *http.Client) []checkResult {
	tokenBase := strings.TrimRight(c.TokenBase, "/")
	if tokenBase == "" {
		tokenBase = qq.DefaultTokenBase
	}
	apiBase := strings.TrimRight(c.APIBase, "/")
	if apiBase == "" {
		apiBase = qq.DefaultAPIBase
		if c.Sandbox {
			apiBase = qq.DefaultSandboxAPIBase
		}
	}
	body, _ := json.Marshal(map[string]string{"appId": c.AppID, "clientSecret": c.AppSecret}) // strings always encode
	var tok struct {
		AccessToken string `json:"access_token"`
		Code        int    `json:"code"`
		Message     string `json:"message"`
	}
	status, err := doJSON(ctx, client, http.MethodPost, tokenBase+"/app/getAppAccessToken", "", body, &tok)
	if err != nil {
		return []checkResult{fail("qq", fmt.Sprintf("cannot get an app access token from %s: %v", hostOf(tokenBase), err),
			"check this machine's network (and QQ_TOKEN_BASE if set)")}
	}
	if tok.AccessToken == "" {
		// QQ answers wrong credentials with HTTP 200 and a code.
		return []checkResult{fail("qq", fmt.Sprintf("QQ_APP_ID / QQ_APP_SECRET are refused by QQ (HTTP %d, code %d: %s)", status, tok.Code, tok.Message),
			"copy the AppID and AppSecret again from the QQ bot console (q.qq.com → Development → Settings) into QQ_APP_ID and QQ_APP_SECRET")}
	}
	out := []checkResult{pass("qq", "app access token issued for app "+c.AppID)}

	var gw struct {
		URL   string `json:"url"`
		Limit struct {
			Remaining int `json:"remaining"`
			Total     int `json:"total"`
		} `json:"session_start_limit"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	status, err = doJSON(ctx, client, http.MethodGet, apiBase+"/gateway/bot", "QQBot "+tok.AccessToken, nil, &gw)
	switch {
	case err != nil:
		return append(out, fail("qq gateway", fmt.Sprintf("cannot reach %s: %v", hostOf(apiBase), err), "check this machine's network (and QQ_API_BASE if set)"))
	case status != http.StatusOK || gw.URL == "":
		return append(out, fail("qq gateway", fmt.Sprintf("no gateway (HTTP %d, code %d: %s)", status, gw.Code, gw.Message),
			"check that the bot is published (or use QQ_SANDBOX=true for a bot in the sandbox)"))
	case gw.Limit.Total > 0 && gw.Limit.Remaining == 0:
		return append(out, warn("qq gateway", "no session starts left today (session_start_limit.remaining is 0)",
			"wait for the limit to reset; avoid restarting ship in a loop"))
	}
	return append(out, pass("qq gateway", fmt.Sprintf("gateway %s (%d session starts left)", hostOf(gw.URL), gw.Limit.Remaining)))
}

// doJSON makes one call and decodes its JSON answer into out, returning
// the HTTP status. A body that is not JSON leaves out as it was.
func doJSON(ctx context.Context, client *http.Client, method, url, auth string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, transportCause(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading the answer: %w", err)
	}
	_ = json.Unmarshal(raw, out)
	return resp.StatusCode, nil
}
