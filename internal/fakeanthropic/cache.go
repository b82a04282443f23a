package fakeanthropic

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

// The fake's prompt cache follows Anthropic's "Prompt caching" guide
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching):
//   - only what a request marks is cached: a block with
//     "cache_control": {"type": "ephemeral"} (a tool, a system text block,
//     a message content block) is a breakpoint, and the prefix up to and
//     including it is what gets written and can later be read;
//   - the prefix runs tools → system → messages, in that order;
//   - at most 4 breakpoints per request (more is a 400);
//   - a prefix shorter than the model's minimum cacheable length (1,024
//     tokens for Sonnet and Opus, 2,048 for Haiku) is not cached: it is
//     billed as ordinary input;
//   - at each breakpoint the API also looks for a hit at the block
//     boundaries before it, up to 20 blocks back, and reads the longest
//     cached prefix found;
//   - an entry lives 5 minutes ("ttl": "1h": an hour) and each hit
//     refreshes it;
//   - usage splits the prompt into cache_read_input_tokens (read),
//     cache_creation_input_tokens (written now, up to the last
//     breakpoint) and input_tokens (the rest, after the last breakpoint).
//
// Tokens are the fake's estimate (about four bytes per token, counted per
// block as inputTokens counts them), not a real tokenizer's.
const (
	maxBreakpoints   = 4
	lookbackBlocks   = 20
	defaultCacheTTL  = 5 * time.Minute
	maxCacheEntries  = 4096 // per server: the memory a long run may hold
	minCacheable     = 1024
	minCacheableSlim = 2048 // Haiku models
)

// cacheBlock is one block of a prompt as the cache sees it.
type cacheBlock struct {
	where  string // "tools.0", "system.1", "messages.3.content.0"
	text   string // the block as sent, without its cache_control
	tokens int
	ttl    time.Duration // > 0: the block is a breakpoint
}

// wireCacheControl is a block's cache_control.
type wireCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

// cacheBlocks lays out the prompt of body (decoded as r) in the cache's
// order and reports a misplaced or malformed cache_control as the API
// would.
func cacheBlocks(body []byte, r Request) ([]cacheBlock, *apiError) {
	var w struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, invalid("There was an error parsing the body: %v", err)
	}
	var out []cacheBlock
	add := func(where string, raw json.RawMessage, tokens int) *apiError {
		b, err := blockOf(where, raw, tokens)
		if err != nil {
			return err
		}
		out = append(out, b)
		return nil
	}
	for i, raw := range w.Tools {
		t := r.Tools[i]
		tokens := fakehttp.RoughTokens(t.Name) + fakehttp.RoughTokens(t.Description) + fakehttp.RoughTokens(string(t.InputSchema))
		if err := add(fmt.Sprintf("tools.%d", i), raw, tokens); err != nil {
			return nil, err
		}
	}
	if sys := bytes.TrimSpace(w.System); len(sys) > 0 && sys[0] == '[' {
		var blocks []json.RawMessage
		_ = json.Unmarshal(sys, &blocks) // decodeRequest checked it
		for i, raw := range blocks {
			var tb struct{ Text string }
			_ = json.Unmarshal(raw, &tb)
			if err := add(fmt.Sprintf("system.%d", i), raw, fakehttp.RoughTokens(tb.Text)); err != nil {
				return nil, err
			}
		}
	} else if len(sys) > 0 && string(sys) != "null" {
		out = append(out, cacheBlock{where: "system", text: string(sys), tokens: fakehttp.RoughTokens(r.System)})
	}
	for i, m := range w.Messages {
		content := bytes.TrimSpace(m.Content)
		if len(content) > 0 && content[0] == '"' {
			// A string content is one text block without cache_control.
			out = append(out, cacheBlock{where: fmt.Sprintf("messages.%d", i), text: string(content),
				tokens: 3 + fakehttp.RoughTokens(r.Messages[i].Text())})
			continue
		}
		var blocks []json.RawMessage
		_ = json.Unmarshal(content, &blocks)
		for j, raw := range blocks {
			tokens := 0
			if j == 0 {
				tokens = 3 // the message's own overhead, as inputTokens counts it
			}
			if j < len(r.Messages[i].Blocks) {
				b := r.Messages[i].Blocks[j]
				tokens += fakehttp.RoughTokens(b.Text) + fakehttp.RoughTokens(b.Name) + fakehttp.RoughTokens(string(b.Input))
			}
			if err := add(fmt.Sprintf("messages.%d.content.%d", i, j), raw, tokens); err != nil {
				return nil, err
			}
		}
	}
	n := 0
	for _, b := range out {
		if b.ttl > 0 {
			n++
		}
	}
	if n > maxBreakpoints {
		return nil, invalid("A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, n)
	}
	return out, nil
}

// blockOf reads one block: its text without cache_control, and its TTL
// when it is a breakpoint.
func blockOf(where string, raw json.RawMessage, tokens int) (cacheBlock, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return cacheBlock{where: where, text: string(raw), tokens: tokens}, nil
	}
	b := cacheBlock{where: where, tokens: tokens}
	if cc, ok := fields["cache_control"]; ok && string(bytes.TrimSpace(cc)) != "null" {
		var c wireCacheControl
		if err := json.Unmarshal(cc, &c); err != nil || c.Type != "ephemeral" {
			return b, invalid("%s.cache_control.type: Input should be 'ephemeral'", where)
		}
		switch c.TTL {
		case "", "5m":
			b.ttl = defaultCacheTTL
		case "1h":
			b.ttl = time.Hour
		default:
			return b, invalid("%s.cache_control.ttl: Input should be '5m' or '1h'", where)
		}
		delete(fields, "cache_control")
	}
	text, _ := json.Marshal(fields) // sorted keys: the same block always reads the same
	b.text = string(text)
	return b, nil
}

// cacheUse is what one request read from and wrote to the cache.
type cacheUse struct {
	read, created, total int
	breakpoints          []string
}

// promptCache holds cached prefixes by the hash of the prefix (scope
// first: an organization's cache is its own).
type promptCache struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]time.Time // expiry
}

// use looks blocks up, reads the longest cached prefix at or before a
// breakpoint, writes the prefixes up to each breakpoint and returns the
// token split.
func (c *promptCache) use(scope, model string, blocks []cacheBlock) cacheUse {
	minLen := minCacheable
	if strings.Contains(strings.ToLower(model), "haiku") {
		minLen = minCacheableSlim
	}
	hashes := make([][32]byte, len(blocks))
	cum := make([]int, len(blocks)) // tokens up to and including block i
	h := sha256.Sum256([]byte(scope + "\x00" + model))
	var u cacheUse
	for i, b := range blocks {
		h = sha256.Sum256(append(h[:], b.text...))
		hashes[i] = h
		u.total += b.tokens
		cum[i] = u.total
		if b.ttl > 0 {
			u.breakpoints = append(u.breakpoints, b.where)
		}
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[32]byte]time.Time{}
	}
	hitAt := -1
	for i, b := range blocks {
		if b.ttl == 0 {
			continue
		}
		for p := i; p >= 0 && p >= i-lookbackBlocks && p > hitAt; p-- {
			if exp, ok := c.entries[hashes[p]]; ok && now.Before(exp) && cum[p] >= minLen {
				hitAt = p
				break
			}
		}
	}
	if hitAt >= 0 {
		u.read = cum[hitAt]
	}
	last := -1
	for i, b := range blocks {
		if b.ttl == 0 || cum[i] < minLen {
			continue
		}
		// Writing a prefix again (or reading it) restarts its lifetime.
		if exp, ok := c.entries[hashes[i]]; !ok || exp.Before(now.Add(b.ttl)) {
			c.entries[hashes[i]] = now.Add(b.ttl)
		}
		last = i
	}
	if hitAt >= 0 {
		if exp := c.entries[hashes[hitAt]]; exp.Before(now.Add(defaultCacheTTL)) {
			c.entries[hashes[hitAt]] = now.Add(defaultCacheTTL)
		}
	}
	if last >= 0 && cum[last] > u.read {
		u.created = cum[last] - u.read
	}
	c.evict(now)
	return u
}

// evict drops expired entries, and the soonest to expire when more than
// maxCacheEntries remain.
func (c *promptCache) evict(now time.Time) {
	if len(c.entries) <= maxCacheEntries {
		return
	}
	for k, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, k)
		}
	}
	for len(c.entries) > maxCacheEntries {
		var oldest [32]byte
		var at time.Time
		for k, exp := range c.entries {
			if at.IsZero() || exp.Before(at) {
				oldest, at = k, exp
			}
		}
		delete(c.entries, oldest)
	}
}
