// Package metrics keeps ship's Prometheus metrics in a Set of its own (no
// global registry): the binary builds one Set when metrics are on and
// hands it to the engine, the platform adapters (as an adapters.Meter)
// and the HTTP side, which serves Handler at /metrics.
//
// It writes the Prometheus text format itself rather than link
// github.com/prometheus/client_golang: linking that library (with
// client_model, protobuf and procfs) raised ship's idle resident memory
// by 2.6 MiB, whether metrics were on or off, past the 24 MiB budget
// (BENCHMARKS.md); what ship needs (counters, histograms, gauges read at
// scrape time) is a few hundred lines. Tests read the output back with
// the Prometheus text parser (github.com/prometheus/common/expfmt).
//
// Every label takes values from a bounded set: channel and outcome names,
// configured model and MCP server names, platform method names and codes,
// job states. Never a chat, a person, a request or a tool's arguments:
// each label value is a series Prometheus keeps for as long as ship runs,
// and a label that grows with chats grows without end. As a last guard
// every label admits at most maxValues distinct values; later ones are
// counted as "other".
//
// A nil *Set is valid and counts nothing, so the counting points cost a
// nil check when metrics are off.
package metrics

import (
	"bufio"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Outcomes of a turn (the outcome label of ship_turns_total).
const (
	OutcomeOK          = "ok"          // the run finished and its reply went out
	OutcomeFailed      = "failed"      // the run failed (the model, a crash)
	OutcomeTimeout     = "timeout"     // the run hit queue.runTimeout
	OutcomeCancelled   = "cancelled"   // shutdown cut the run short (it resumes at the next start)
	OutcomeUndelivered = "undelivered" // the run ended but the platform refused its reply
	OutcomeHandedOver  = "handed_over" // another replica answers the message (cluster mode)
	OutcomeRefused     = "refused"     // the message was not taken (limits, a full queue, a budget)
)

// CodeOK is the code label of a platform call that succeeded.
const CodeOK = "ok"

// latencyBuckets are the latency histograms' buckets, in seconds: 50 ms
// (a fast model's call) to 5 minutes; a longer turn (queue.runTimeoutSeconds
// allows 10 by default) counts only in +Inf.
func latencyBuckets() []float64 {
	return []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
}

// queueBuckets start lower: most messages wait for nothing.
func queueBuckets() []float64 { return []float64{0.005, 0.05, 0.25, 1, 5, 15, 30, 60, 120, 300} }

// Options choose the metrics beside ship's own.
type Options struct {
	// Process adds process_* (CPU seconds, resident memory, open files,
	// start time) and go_* (goroutines, heap), read at each scrape.
	Process bool
}

// Set is ship's metrics.
type Set struct {
	values *bounded
	start  time.Time

	mu      sync.Mutex
	writers map[string]func(*bufio.Writer) // by family name

	turns        *family
	turnSeconds  *family
	queueWait    *family
	modelSeconds *family
	tokensIn     *family
	tokensCached *family
	tokensOut    *family
	apiCalls     *family
	apiErrors    *family
	jobsFinished *family
}

// New builds a Set with ship's metrics.
func New(opts Options) *Set {
	s := &Set{values: newBounded(maxValues), start: time.Now(), writers: map[string]func(*bufio.Writer){}}
	s.turns = s.counter("ship_turns_total",
		"Turns (messages the agent was asked to answer) by channel (telegram, feishu, qq, api, cli, scheduler) and outcome (ok, failed, timeout, cancelled, undelivered, handed_over, refused).",
		"channel", "outcome")
	s.turnSeconds = s.histogram("ship_turn_duration_seconds",
		"Time from a turn's start (after its wait in the queue) to its end, by channel.", latencyBuckets(), "channel")
	s.queueWait = s.histogram("ship_queue_wait_seconds",
		"Time a message waited in the queue before its turn started.", queueBuckets())
	s.modelSeconds = s.histogram("ship_model_call_duration_seconds",
		"Duration of one model call (a turn makes one per step), by configured model name and outcome (ok, error, cancelled).",
		latencyBuckets(), "model", "outcome")
	s.tokensIn = s.counter("ship_model_input_tokens_total",
		"Prompt tokens the provider reported, by configured model name (cached ones included).", "model")
	s.tokensCached = s.counter("ship_model_cached_input_tokens_total",
		"The part of the prompt tokens read from the provider's prompt cache, by configured model name.", "model")
	s.tokensOut = s.counter("ship_model_output_tokens_total",
		"Completion tokens the provider reported, by configured model name.", "model")
	s.apiCalls = s.counter("ship_platform_api_calls_total",
		"Calls to a platform's API (Telegram Bot API, Feishu open platform, QQ bot API), every attempt counted, by platform and method.",
		"platform", "method")
	s.apiErrors = s.counter("ship_platform_api_errors_total",
		"Platform API calls that failed, by platform, method and code (the HTTP status or the platform's error code; 429 is a rate limit; network when no answer came).",
		"platform", "method", "code")
	s.jobsFinished = s.counter("ship_jobs_finished_total",
		"Background jobs that ended, by state (done, failed, cancelled, interrupted).", "state")
	if opts.Process {
		s.process()
	}
	return s
}

func (s *Set) counter(name, help string, labels ...string) *family {
	f := newFamily(name, help, "counter", nil, labels...)
	s.register(name, f.write)
	return f
}

func (s *Set) histogram(name, help string, buckets []float64, labels ...string) *family {
	f := newFamily(name, help, "histogram", buckets, labels...)
	s.register(name, f.write)
	return f
}

// register adds a family's writer. A name registered again replaces the
// earlier writer: a part built anew with the same Set (an engine in a
// test, say) reports its own values, not a second family of the name.
func (s *Set) register(name string, write func(*bufio.Writer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writers[name] = write
}

// Handler serves the metrics in the Prometheus text format, families
// sorted by name.
func (s *Set) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		for _, write := range s.sorted() {
			write(bw)
		}
		_ = bw.Flush() // a scraper that went away: nothing to tell it
	})
}

func (s *Set) sorted() []func(*bufio.Writer) {
	names := s.Names()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]func(*bufio.Writer), 0, len(names))
	for _, n := range names {
		if w, ok := s.writers[n]; ok {
			out = append(out, w)
		}
	}
	return out
}

// Names lists the metric families the Set serves.
func (s *Set) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.writers))
	for n := range s.writers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Turn counts a turn that ran: its channel and outcome, how long it ran
// and how long it waited in the queue before.
func (s *Set) Turn(channel, outcome string, took, waited time.Duration) {
	if s == nil {
		return
	}
	channel = s.values.admit("channel", channel)
	s.turns.add(1, channel, outcome)
	s.turnSeconds.observe(took.Seconds(), channel)
	if waited >= 0 {
		s.queueWait.observe(waited.Seconds())
	}
}

// Refused counts a message that was not taken (OutcomeRefused): it never
// ran, so no duration is observed.
func (s *Set) Refused(channel string) {
	if s == nil {
		return
	}
	s.turns.add(1, s.values.admit("channel", channel), OutcomeRefused)
}

// ModelCall observes one model call of model (a configured name).
func (s *Set) ModelCall(model, outcome string, took time.Duration) {
	if s == nil {
		return
	}
	s.modelSeconds.observe(took.Seconds(), s.values.admit("model", model), outcome)
}

// Tokens counts the tokens a turn used on model.
func (s *Set) Tokens(model string, input, cached, output int) {
	if s == nil || input+cached+output == 0 {
		return
	}
	model = s.values.admit("model", model)
	s.tokensIn.add(float64(input), model)
	s.tokensCached.add(float64(cached), model)
	s.tokensOut.add(float64(output), model)
}

// PlatformCall counts one call to a platform's API (it implements
// adapters.Meter): code is CodeOK, or the HTTP status or platform error
// code, or "network".
func (s *Set) PlatformCall(platform, method, code string) {
	if s == nil {
		return
	}
	platform, method = s.values.admit("platform", platform), s.values.admit("method", method)
	s.apiCalls.add(1, platform, method)
	if code != CodeOK {
		s.apiErrors.add(1, platform, method, s.values.admit("code", code))
	}
}

// JobFinished counts a background job that ended in state.
func (s *Set) JobFinished(state string) {
	if s == nil {
		return
	}
	s.jobsFinished.add(1, s.values.admit("state", state))
}
