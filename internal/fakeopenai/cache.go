package fakeopenai

import (
	"sync"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

// The fake's prompt cache follows OpenAI's "Prompt caching" guide
// (https://platform.openai.com/docs/guides/prompt-caching):
//   - caching is automatic for prompts of 1,024 tokens or more; shorter
//     prompts report cached_tokens 0;
//   - a request reuses the longest prefix of its prompt that an earlier
//     request of the same organization sent to the same model; cache hits
//     come in increments of 128 tokens (1,024, 1,152, 1,280, …);
//   - the prompt is the tools, then the messages in order, so anything
//     that changes near the start (a timestamp in the system message)
//     leaves nothing to reuse after it;
//   - cached prefixes stay for 5 to 10 minutes of inactivity (this fake
//     keeps them 5 minutes after their last use);
//   - what was read from the cache is reported as
//     usage.prompt_tokens_details.cached_tokens, part of prompt_tokens.
//
// Tokens are the fake's estimate (about four bytes per token, counted per
// tool and per message as promptTokens counts them), not a real tokenizer's.
const (
	cacheMinTokens   = 1024
	cacheIncrement   = 128
	cacheTTL         = 5 * time.Minute
	maxCachedPrompts = 64 // per server: the memory a long run may hold
)

// unit is one piece of a prompt as the cache compares it: a tool or a
// message, with its share of the prompt's tokens.
type unit struct {
	text   string
	tokens int
}

// promptUnits lays out r's prompt in the order the model reads it: the
// tools, then the messages. The tokens add up to promptTokens(r) less the
// reply priming.
func promptUnits(r Request) []unit {
	var out []unit
	for _, t := range r.Tools {
		out = append(out, unit{text: "tool\x00" + t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters),
			tokens: fakehttp.RoughTokens(t.Name) + fakehttp.RoughTokens(t.Description) + fakehttp.RoughTokens(string(t.Parameters))})
	}
	for _, m := range r.Messages {
		u := unit{text: m.Role + "\x00" + m.ToolCallID + "\x00" + m.Content, tokens: 4 + fakehttp.RoughTokens(m.Content)}
		for _, im := range m.Images {
			u.text += "\x00image\x00" + im.URL
		}
		for _, tc := range m.ToolCalls {
			u.text += "\x00call\x00" + tc.ID + "\x00" + tc.Name + "\x00" + tc.Arguments
			u.tokens += fakehttp.RoughTokens(tc.Name) + fakehttp.RoughTokens(tc.Arguments)
		}
		out = append(out, u)
	}
	return out
}

// cachedPrompt is a prompt the cache remembers.
type cachedPrompt struct {
	scope string // organization (API key) and model
	units []unit
	used  time.Time
}

// promptCache holds the prompts a server has seen, newest last, at most
// maxCachedPrompts.
type promptCache struct {
	now func() time.Time

	mu      sync.Mutex
	prompts []cachedPrompt
}

// lookup returns how many of the prompt's tokens (total in all) are read
// from the cache, then remembers the prompt for the requests after it.
func (c *promptCache) lookup(scope string, units []unit, total int) int {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	best, bestAt := 0, -1
	kept := c.prompts[:0]
	for _, p := range c.prompts {
		if now.Sub(p.used) > cacheTTL {
			continue // evicted after inactivity
		}
		if p.scope == scope {
			if n := commonTokens(p.units, units); n > best {
				best, bestAt = n, len(kept)
			}
		}
		kept = append(kept, p)
	}
	c.prompts = kept
	if bestAt >= 0 {
		c.prompts[bestAt].used = now
	}
	c.remember(cachedPrompt{scope: scope, units: units, used: now})
	if total < cacheMinTokens || best < cacheMinTokens {
		return 0
	}
	return min(best/cacheIncrement*cacheIncrement, total)
}

// remember keeps p, dropping the prompts it extends (a conversation's
// next request replaces its last one) and the oldest beyond the bound.
func (c *promptCache) remember(p cachedPrompt) {
	kept := c.prompts[:0]
	for _, q := range c.prompts {
		if q.scope == p.scope && len(q.units) <= len(p.units) && commonUnits(q.units, p.units) == len(q.units) {
			continue
		}
		kept = append(kept, q)
	}
	c.prompts = append(kept, p)
	if n := len(c.prompts) - maxCachedPrompts; n > 0 {
		c.prompts = append([]cachedPrompt(nil), c.prompts[n:]...)
	}
}

// commonUnits is how many leading units a and b share.
func commonUnits(a, b []unit) int {
	n := 0
	for n < len(a) && n < len(b) && a[n].text == b[n].text {
		n++
	}
	return n
}

// commonTokens estimates the tokens of the longest common prefix of a and
// b: whole units while they match, then the shared bytes of the first
// unit that differs.
func commonTokens(a, b []unit) int {
	n := commonUnits(a, b)
	tokens := 0
	for _, u := range b[:n] {
		tokens += u.tokens
	}
	if n < len(a) && n < len(b) {
		x, y := a[n].text, b[n].text
		k := 0
		for k < len(x) && k < len(y) && x[k] == y[k] {
			k++
		}
		tokens += min(k/4, b[n].tokens)
	}
	return tokens
}
