package feishu

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
)

// botInfoPath is not generated in the SDK; it is called raw.
const botInfoPath = "/open-apis/bot/v3/info"

// botInfo reads the bot's open_id and name. An error of type *finalError
// means retrying will not help (refused credentials, no bot capability).
func (a *Adapter) botInfo(ctx context.Context) (openID, name string, err error) {
	refreshed := false
	for {
		resp, err := a.cli.Get(ctx, botInfoPath, nil, larkcore.AccessTokenTypeTenant)
		if err != nil {
			var ce larkcore.CodeError
			if errors.As(err, &ce) && !isRateLimit(ce.Code, 0) {
				return "", "", &finalError{fmt.Sprintf("feishu refused the app credentials (code %d: %s): "+
					"check FEISHU_APP_ID, FEISHU_APP_SECRET and FEISHU_DOMAIN", ce.Code, ce.Msg)}
			}
			return "", "", fmt.Errorf("feishu bot info: %s", a.scrub(err.Error()))
		}
		var body struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
			Bot  struct {
				OpenID  string `json:"open_id"`
				AppName string `json:"app_name"`
			} `json:"bot"`
		}
		if err := json.Unmarshal(resp.RawBody, &body); err != nil {
			return "", "", fmt.Errorf("feishu bot info: HTTP %d, unreadable answer: %w", resp.StatusCode, err)
		}
		res := apiResult{code: body.Code, msg: body.Msg, status: resp.StatusCode, header: resp.Header}
		switch classify(res, nil) {
		case outcomeOK:
			if body.Bot.OpenID == "" {
				return "", "", &finalError{"feishu bot info has no open_id: enable the app's bot capability"}
			}
			return body.Bot.OpenID, body.Bot.AppName, nil
		case outcomeTokenInvalid:
			if !refreshed {
				dropTokens(a.opts.AppID)
				refreshed = true
				continue
			}
		case outcomeRateLimited, outcomeTransient:
			return "", "", fmt.Errorf("feishu bot info: %s", a.failure(res, nil))
		}
		return "", "", &finalError{fmt.Sprintf("feishu bot info refused (%s): check that the app's bot capability "+
			"is enabled and FEISHU_APP_ID/FEISHU_APP_SECRET are right", a.failure(res, nil))}
	}
}

// uuidFor is the idempotency key of one part of one message: the same for
// every attempt of that part, different for each chat_send about one
// triggering message (n counts them), for each part and for each kind. It is
// derived, not random, so a run repeated after a crash does not post again
// what Feishu already took (it remembers uuids for an hour).
func uuidFor(kind, messageID string, n, part int) string {
	var b [16]byte
	if messageID == "" {
		_, _ = rand.Read(b[:]) // crypto/rand does not fail
	} else {
		sum := sha256.Sum256(fmt.Appendf(nil, "ship/feishu/%s/%s/%d/%d", kind, messageID, n, part))
		copy(b[:], sum[:16])
	}
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// replyMemory is how many triggering messages replyCounter remembers.
const replyMemory = 10_000

// replyCounter numbers the messages of each kind about each triggering
// message.
type replyCounter struct {
	mu    sync.Mutex
	n     map[string]int
	order []string
}

// next returns 0 for the first message of kind about messageID, then 1, 2, …
func (c *replyCounter) next(kind, messageID string) int {
	if messageID == "" {
		return 0
	}
	key := kind + "/" + messageID
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[string]int)
	}
	n, ok := c.n[key]
	if !ok {
		c.order = append(c.order, key)
		if len(c.order) > replyMemory {
			// Replies to a message come within its run; the oldest
			// triggers are long answered.
			delete(c.n, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.n[key] = n + 1
	return n
}
