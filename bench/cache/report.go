package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/fakeopenai"
)

// agentText is the operator's Agent.md: standing instructions of the size
// a team assistant has (about 2,400 bytes).
var agentText = `# Team assistant

You are the assistant of the platform team's group chat. The team runs the
company's build farm, the deployment pipeline and the on-call rotation.

## How to answer
- Answer in the language of the question; keep answers short unless asked
  for detail. Prefer lists for steps and tables for comparisons.
- When a question is about an incident, ask for the service, the time it
  started and what changed, unless the message says so already.
- Never paste secrets, tokens or passwords into the chat, even when asked.
- When you are not sure, say so and say what would settle it.

## What the team works with
- Build farm: 40 runners on two clusters (eu-1, us-2); the queue is in
  the build dashboard; a runner that fails three jobs in a row is drained.
- Deployments: every service deploys through the pipeline; production
  deploys need a second approver and are frozen on Fridays after 15:00.
- On call: one primary and one secondary per week, handover on Mondays at
  10:00; pages go to the primary first, after 10 minutes to the secondary.
- Incidents: severity 1 pages everyone on call; severity 2 pages the
  primary; severity 3 is a ticket. Post-mortems are due within five days.

## Conventions
- Service names are lower-case with dashes (billing-api, search-indexer).
- Times are in UTC unless someone says otherwise.
- Link tickets as TEAM-1234; link runbooks by their title.
- Keep the tone friendly and plain; no jokes during incidents.
`

// questions are what people in the chat ask, in turn.
var questions = []string{
	"Who is on call this week, and when is the handover?",
	"The billing-api deploy is stuck at the approval step. What do I need to do?",
	"Can you summarise what we said about the runner drain policy?",
	"search-indexer latency went up at 14:20 UTC after the config change. Severity?",
	"Draft a short post-mortem outline for yesterday's queue outage.",
	"Is it fine to deploy the metrics-gateway hotfix now? It's Friday 16:10.",
	"How many runners are in eu-1 and how many in us-2?",
	"Remind me of the paging order when the primary does not answer.",
	"Write a checklist for the Monday handover.",
	"What changed in the pipeline since last week, as far as we discussed it here?",
	"Compare the two clusters for cost and failure rate, in a small table.",
	"Thanks! Last one: which runbook covers a full disk on a runner?",
}

// question is what turn t asks.
func question(t int) string {
	return fmt.Sprintf("%s (message %d)", questions[(t-1)%len(questions)], t)
}

// answer is the scripted model's reply to a question: a paragraph of a
// few hundred bytes that depends on the question.
func answer(q string) string {
	n := 3 + len(q)%5
	var b strings.Builder
	fmt.Fprintf(&b, "On %q: ", q)
	for i := range n {
		fmt.Fprintf(&b, "point %d, checked against the runbook and the dashboard; ", i+1)
	}
	b.WriteString("tell me if you want more detail.")
	return b.String()
}

// summary is the scripted model's answer to a request without tools: the
// runtime asking for a summary of the oldest turns (about 1,000 bytes).
var summary = "The team asked about on-call, deployments, runners and incidents; " +
	strings.Repeat("the assistant answered from the runbook and the dashboard, and nothing is open. ", 12)

// openAIModel answers each turn with one chat_send, then ends the turn,
// and a request for a summary with one.
func openAIModel(r fakeopenai.Request) fakeopenai.Response {
	if !r.HasTool("chat_send") {
		return fakeopenai.Response{Content: summary}
	}
	if len(r.ToolResults()) > 0 {
		return fakeopenai.Response{}
	}
	args, _ := json.Marshal(map[string]string{"text": answer(r.LastUser())}) // a string map always encodes
	return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "chat_send", Arguments: string(args)}}}
}

// anthropicModel is openAIModel for Claude.
func anthropicModel(r fakeanthropic.Request) fakeanthropic.Response {
	if !r.HasTool("chat_send") {
		return fakeanthropic.Response{Text: summary}
	}
	if len(r.ToolResults()) > 0 {
		return fakeanthropic.Response{}
	}
	input, _ := json.Marshal(map[string]string{"text": answer(r.LastUser())}) // a string map always encodes
	return fakeanthropic.Response{ToolUses: []fakeanthropic.ToolUse{{Name: "chat_send", Input: string(input)}}}
}

// promptOrder joins the body's values of keys in that order: the prompt
// as the provider reads it (tools first), whatever the order of the keys
// in the body. Cache breakpoints are left out: they mark where a prefix
// ends and are no part of it (the next request reads the prefix a
// breakpoint wrote although its own breakpoint has moved on).
func promptOrder(body []byte, keys ...string) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	var out []byte
	for _, k := range keys {
		out = append(out, top[k]...)
	}
	return bytes.ReplaceAll(out, []byte(`,"cache_control":{"type":"ephemeral"}`), nil)
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// rowsOf turns the recorded requests of the conversation into rows,
// each compared with the conversation's request before it; turnOf says
// each request's turn. Requests for a summary (they offer no tools) are
// counted apart: the provider keeps their prefix beside the
// conversation's, and they do not stand between two turns' prompts.
func rowsOf(reqs []recorded, turnOf []int) (rows []row, summaries []recorded) {
	var prev *recorded
	for i := range reqs {
		r := &reqs[i]
		if !r.conversation {
			summaries = append(summaries, *r)
			continue
		}
		rw := row{turn: turnOf[min(i, len(turnOf)-1)], call: 1, bytes: len(r.body), promptTokens: r.tokens,
			cached: r.cached, written: r.written}
		if prev != nil {
			rw.bodyShare = float64(commonPrefix(prev.body, r.body)) / float64(len(r.body))
			rw.promptShare = float64(commonPrefix(prev.prompt, r.prompt)) / float64(max(len(r.prompt), 1))
			if last := rows[len(rows)-1]; last.turn == rw.turn {
				rw.call = last.call + 1
			}
		}
		rows = append(rows, rw)
		prev = r
	}
	return rows, summaries
}

// report prints one conversation's rows and summary as Markdown.
func report(w io.Writer, provider string, n int, rows []row, summaries []recorded, every int) {
	if every == 0 {
		every = 1
		if n > 30 {
			every = 10
		}
	}
	fmt.Fprintf(w, "\n### %s, %d turns a minute apart\n\n", provider, n)
	fmt.Fprintln(w, "A row is a turn's first model call; the summary counts every call.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| turn | request bytes | prompt tokens | body prefix share | prompt prefix share | cached tokens | written to cache |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		if r.call != 1 || (r.turn != 1 && r.turn != n && r.turn%every != 0) {
			continue
		}
		fmt.Fprintf(w, "| %d | %d | %d | %s | %s | %d | %d |\n", r.turn, r.bytes, r.promptTokens,
			pct(r.bodyShare), pct(r.promptShare), r.cached, r.written)
	}
	var first, all stats
	prompt, cached, written := 0, 0, 0
	last := 0
	for _, r := range rows {
		prompt += r.promptTokens
		cached += r.cached
		written += r.written
		if r.call == 1 {
			last = r.promptTokens
		}
		if r.turn < 3 {
			continue
		}
		all.add(r)
		if r.call == 1 {
			first.add(r)
		}
	}
	share := func(st *stats, f func(row) float64) string {
		return fmt.Sprintf("mean %s, min %s", pct(st.mean(f)), pct(st.min(f)))
	}
	body := func(r row) float64 { return r.bodyShare }
	prefix := func(r row) float64 { return r.promptShare }
	fmt.Fprintln(w)
	fmt.Fprintf(w, "- Prefix share from turn 3, turns' first calls: prompt order %s; body %s.\n", share(&first, prefix), share(&first, body))
	if len(all.rows) != len(first.rows) {
		fmt.Fprintf(w, "- Every call from turn 3 (%d): prompt order %s; body %s.\n", len(all.rows), share(&all, prefix), share(&all, body))
	}
	fmt.Fprintf(w, "- Conversation calls: %d; prompt tokens %d, of them read from the cache %d (%s)", len(rows), prompt, cached,
		pct(float64(cached)/float64(max(prompt, 1))))
	if written > 0 {
		fmt.Fprintf(w, ", written to it %d", written)
	}
	fmt.Fprintf(w, "; the last turn's prompt: %d tokens.\n", last)
	if len(summaries) > 0 {
		st := 0
		for _, r := range summaries {
			st += r.tokens
		}
		fmt.Fprintf(w, "- Summary calls: %d, %d prompt tokens in all.\n", len(summaries), st)
	}
}

// stats gathers rows for a mean and a minimum.
type stats struct{ rows []row }

func (s *stats) add(r row) { s.rows = append(s.rows, r) }

func (s *stats) mean(f func(row) float64) float64 {
	if len(s.rows) == 0 {
		return 0
	}
	sum := 0.0
	for _, r := range s.rows {
		sum += f(r)
	}
	return sum / float64(len(s.rows))
}

func (s *stats) min(f func(row) float64) float64 {
	if len(s.rows) == 0 {
		return 0
	}
	m := f(s.rows[0])
	for _, r := range s.rows[1:] {
		m = min(m, f(r))
	}
	return m
}

func pct(f float64) string { return fmt.Sprintf("%.1f %%", 100*f) }
