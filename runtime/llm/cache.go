package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tmc/langchaingo/llms"
)

// Anthropic caches a prompt prefix only up to a block marked with
// "cache_control": {"type": "ephemeral"}, at most 4 per request, in the
// order tools → system → messages, for 5 minutes after its last use
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching).
// ship marks, for every Claude call:
//   - the last tool: the tool definitions, read from the cache even on a
//     turn whose system prompt changed (a new summary, edited notes);
//   - the end of the system prompt: the tools and the stable instructions;
//   - the end of the history, the last message before the current turn:
//     the next turn reads everything up to here from the cache;
//   - in a turn's first call, also the end of the history before the last
//     turn in it, which is where the previous turn's mark was: the API
//     looks back from a mark for an earlier hit only 20 blocks, and a turn
//     with many tool calls is longer;
//   - in a turn's later model calls, the last message (a tool result), so
//     the next call of the same turn reads the turn so far.
// That is at most 4, the API's limit.
//
// langchaingo v0.1.14 can mark only user text and image parts
// (llms.WithCacheControl); it sends the system prompt as a plain string
// and tool results and assistant messages without cache_control. So the
// marks are spliced into the request body by the HTTP doer, which knows
// from the call's context where they go (cachePlan). OpenAI-compatible
// servers cache by prefix automatically and need no marks.

// ephemeral is the cache_control every breakpoint carries (5 minutes).
const ephemeral = `{"type":"ephemeral"}`

// cachePlan says where one request's breakpoints go (the last tool's
// always).
type cachePlan struct {
	system bool
	// messages are indexes into the request's messages array (the
	// messages after the system prompt) whose last block is marked.
	messages []int
}

// planCache readies msgs for langchaingo's Anthropic client and says where
// the breakpoints go.
//
// Only the leading system messages form the system prompt. A system
// message anywhere else, and in particular right before the user's
// message (the runtime facts that change every turn, placed after the
// history so that they do not break the cached prefix), is sent as user
// text where it stands: the Messages API has one system prompt, and
// langchaingo would glue every system message onto it, in front of the
// history, which would change the start of the prompt every turn.
// Consecutive user messages are one user turn to the API.
func planCache(msgs []llms.MessageContent) ([]llms.MessageContent, cachePlan) {
	var plan cachePlan
	user := lastUserText(msgs)
	facts := user // the system messages right before the user's message
	if user < 0 {
		facts = len(msgs)
	}
	for user >= 0 && facts > 1 && msgs[facts-1].Role == llms.ChatMessageTypeSystem {
		facts--
	}
	lead := 0 // the system prompt's messages
	for lead < len(msgs) && lead < max(facts, 1) && msgs[lead].Role == llms.ChatMessageTypeSystem {
		lead++
	}
	out, copied := msgs, false
	for i := lead; i < len(msgs); i++ {
		if msgs[i].Role != llms.ChatMessageTypeSystem {
			continue
		}
		if !copied {
			out, copied = append([]llms.MessageContent(nil), msgs...), true
		}
		out[i] = llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: out[i].Parts}
	}
	for _, m := range out[:lead] {
		if hasText(m) {
			plan.system = true
		}
	}
	// The current turn starts at the last user message with text, and the
	// user text (runtime facts) right before it.
	user = lastUserText(out)
	if user < lead {
		return out, plan
	}
	start := user
	for start > lead && out[start-1].Role == llms.ChatMessageTypeHuman && hasText(out[start-1]) {
		start--
	}
	last := len(out) - 1
	if start > lead && last == user {
		// The end of the history before the last turn in it: what the
		// previous turn marked. The API finds it from the next mark only
		// within 20 blocks, which a turn of many tool calls passes.
		if prev := lastUserText(out[:start]); prev > lead && prev < start {
			plan.messages = append(plan.messages, prev-1-lead)
		}
	}
	if start > lead {
		plan.messages = append(plan.messages, start-1-lead)
	}
	if last > user {
		plan.messages = append(plan.messages, last-lead)
	}
	return out, plan
}

// lastUserText is the index of the last user message with text (a tool
// result has none), -1 when there is none.
func lastUserText(msgs []llms.MessageContent) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman && hasText(msgs[i]) {
			return i
		}
	}
	return -1
}

// hasText reports whether m has a text part (a tool result has none).
func hasText(m llms.MessageContent) bool {
	for _, p := range m.Parts {
		if _, ok := p.(llms.TextContent); ok {
			return true
		}
	}
	return false
}

// errNotMessages says a request body is not the Messages API request the
// plan was made for; the body then goes out unmarked.
var errNotMessages = errors.New("not a messages request")

// markBreakpoints returns body with the plan's cache_control marks. The
// body is spliced, not decoded and encoded again, so it keeps its key
// order and bytes (a prefix that is the same across calls stays so).
func markBreakpoints(body []byte, plan cachePlan) ([]byte, error) {
	type splice struct {
		at   int    // offset in body
		cut  int    // bytes of body replaced from at
		with string // what goes there
	}
	var edits []splice
	err := eachTopLevel(body, func(key string, start, end int) error {
		switch key {
		case "tools":
			lastEnd, err := lastElementEnd(body, start, end)
			if err != nil {
				return err
			}
			if lastEnd > 0 && body[lastEnd-1] == '}' {
				edits = append(edits, splice{at: lastEnd - 1, with: `,"cache_control":` + ephemeral})
			}
		case "system":
			if !plan.system || body[start] != '"' {
				return nil // not set, or already blocks
			}
			edits = append(edits, splice{at: start, cut: end - start,
				with: `[{"type":"text","text":` + string(body[start:end]) + `,"cache_control":` + ephemeral + `}]`})
		case "messages":
			return eachElement(body, start, end, func(i, ms, me int) error {
				if !slices.Contains(plan.messages, i) {
					return nil
				}
				return eachTopLevel(body[ms:me], func(key string, cs, ce int) error {
					if key != "content" || body[ms+cs] != '[' {
						return nil
					}
					lastEnd, err := lastElementEnd(body[ms:me], cs, ce)
					if err != nil {
						return err
					}
					if lastEnd > 0 && body[ms+lastEnd-1] == '}' {
						edits = append(edits, splice{at: ms + lastEnd - 1, with: `,"cache_control":` + ephemeral})
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(edits) == 0 {
		return body, nil
	}
	out := make([]byte, 0, len(body)+64*len(edits))
	prev := 0
	for _, e := range edits { // in body order: system and messages are visited in order
		if e.at < prev {
			return nil, fmt.Errorf("marking cache breakpoints: %w", errNotMessages)
		}
		out = append(out, body[prev:e.at]...)
		out = append(out, e.with...)
		prev = e.at + e.cut
	}
	return append(out, body[prev:]...), nil
}

// lastElementEnd is where the last element of the JSON array at
// body[start:end] ends in body; -1 for an empty array.
func lastElementEnd(body []byte, start, end int) (int, error) {
	lastEnd := -1
	err := eachElement(body, start, end, func(_, _, ee int) error {
		lastEnd = ee
		return nil
	})
	return lastEnd, err
}

// eachTopLevel calls f with each key of the JSON object obj and where its
// value starts and ends in obj.
func eachTopLevel(obj []byte, f func(key string, start, end int) error) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errNotMessages
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return errNotMessages
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return errNotMessages
		}
		end := int(dec.InputOffset())
		if err := f(key, end-len(raw), end); err != nil {
			return err
		}
	}
	return nil
}

// eachElement calls f with the index of each element of the JSON array at
// body[start:end] and where it starts and ends in body.
func eachElement(body []byte, start, end int, f func(i, es, ee int) error) error {
	dec := json.NewDecoder(bytes.NewReader(body[start:end]))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return errNotMessages
	}
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return errNotMessages
		}
		ee := start + int(dec.InputOffset())
		if err := f(i, ee-len(raw), ee); err != nil {
			return err
		}
	}
	return nil
}

// withBreakpoints returns req's body marked as plan says. A body that is
// not what the plan expects goes out as it was: a missed cache costs
// money, a failed call costs the answer.
func withBreakpoints(body io.Reader, plan cachePlan) ([]byte, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("reading the model request: %w", err)
	}
	if marked, err := markBreakpoints(b, plan); err == nil {
		return marked, nil
	}
	return b, nil
}
