package feishu

import (
	"context"
	"strings"
	"sync"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
)

// The SDK fetches and caches tenant tokens itself, for the token's lifetime
// minus three minutes, but when the API answers 99991663 (invalid or expired
// token: revoked, rotated secret, clock trouble) it retries once with the
// SAME cached token and gives up, so every later call fails until the cache
// entry runs out, up to two hours (for 99991668, another "invalid access
// token" answer, it does not even retry). Ship must be able to drop the
// cached token, and the SDK offers no call for that: the seam is the token
// cache.
//
// This is the one piece of package-level state, forced by the SDK:
// larkcore keeps its token manager in a package variable, and
// lark.NewClient(…, lark.WithTokenCache(c)) REPLACES it for every client in
// the process. So there is one cache for the process, installed with the
// first client (installToken), and clients made later do not pass it again:
// re-installing would write the SDK's variable while other clients read it.
var (
	sdkTokens    = &tokenCache{m: make(map[string]tokenEntry)}
	installToken sync.Once
)

// clientOptions adds the shared token cache to the first client's options.
func clientOptions(opts ...lark.ClientOptionFunc) []lark.ClientOptionFunc {
	installToken.Do(func() {
		opts = append(opts, lark.WithTokenCache(sdkTokens))
	})
	return opts
}

// dropTokens forgets every token the SDK cached for appID, so that the next
// call fetches a fresh one.
func dropTokens(appID string) { sdkTokens.dropApp(appID) }

// tokenCache implements larkcore.Cache. The SDK's keys look like
// "tenant_access_token:app_secret:<app id>:<secret hash>:<tenant key>".
type tokenCache struct {
	mu sync.Mutex
	m  map[string]tokenEntry
}

type tokenEntry struct {
	value   string
	expires time.Time
}

// Get returns the cached value, "" when absent or expired (what the SDK
// takes for "fetch a new one").
func (c *tokenCache) Get(_ context.Context, key string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || !time.Now().Before(e.expires) {
		delete(c.m, key)
		return "", nil
	}
	return e.value, nil
}

// Set caches value for ttl.
func (c *tokenCache) Set(_ context.Context, key, value string, ttl time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = tokenEntry{value: value, expires: time.Now().Add(ttl)}
	return nil
}

// dropApp deletes every entry of appID (tenant and app tokens alike).
func (c *tokenCache) dropApp(appID string) {
	needle := ":" + appID + ":"
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if strings.Contains(k, needle) {
			delete(c.m, k)
		}
	}
}
