// Command cache measures how much of each model request a provider could
// serve from its prompt cache (issue 30): it runs ship's real agent runtime
// (the default tools, history and its summaries, Agent.md, the langchaingo
// clients runtime/llm builds)
// against the loopback fakes of OpenAI's Chat Completions and Anthropic's
// Messages API, through one chat of N turns a minute apart (the runtime's
// clock is moved a minute per turn; nothing waits), and prints per turn:
// the request's bytes and prompt tokens, the share of the request body
// that is an exact prefix of the previous request's body, the same share
// in the order the provider reads the prompt (tools, system, messages),
// and the cached tokens the fake reported; then a summary.
//
//	go run ./bench/cache [-turns 30,300] [-every 0]
//
// Tokens are the fakes' estimate (about four bytes per token); the prefix
// shares are exact.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/internal/fakeanthropic"
	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/tools"
)

func main() {
	turnsFlag := flag.String("turns", "30,300", "conversation lengths to run, comma-separated")
	every := flag.Int("every", 0, "print every Nth turn's row (0: every row up to 30 turns, else every 10th)")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `Usage: go run ./bench/cache [flags]

Runs one chat of N turns a minute apart through ship's runtime against the
fake OpenAI and Anthropic servers and prints, per turn, the request size,
the share of it that repeats the previous request exactly, and the cached
tokens the fake reported, as Markdown.

Flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	var lengths []int
	for _, f := range strings.Split(*turnsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fmt.Fprintf(os.Stderr, "cache: -turns wants numbers of at least 2, got %q\n", f)
			os.Exit(2)
		}
		lengths = append(lengths, n)
	}
	if flag.NArg() > 0 || *every < 0 {
		flag.Usage()
		os.Exit(2)
	}
	for _, provider := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		for _, n := range lengths {
			rows, summaries, err := run(provider, n)
			if err != nil {
				fmt.Fprintf(os.Stderr, "cache: %s, %d turns: %v\n", provider, n, err)
				os.Exit(1)
			}
			report(os.Stdout, provider, n, rows, summaries, *every)
		}
	}
}

// row is one model request as the fake saw it.
type row struct {
	turn, call   int // call counts the turn's model calls from 1
	bytes        int
	promptTokens int
	bodyShare    float64 // longest common prefix with the previous body / this body
	promptShare  float64 // the same, in the order the provider reads the prompt
	cached       int     // read from the cache
	written      int     // Anthropic: written to the cache
}

// recorded is what both fakes record of a request, in common.
type recorded struct {
	body                    []byte
	prompt                  []byte // tools, system, messages
	tokens, cached, written int
	conversation            bool // offers the tools: a turn's call, not a summary
}

// fake is a running fake model server.
type fake struct {
	cfg      llm.Config
	requests func() []recorded
	count    func() int
	close    func()
}

// startFake starts the provider's fake with its scripted model.
func startFake(provider string) (fake, error) {
	if provider == llm.ProviderOpenAI {
		s, err := fakeopenai.Start(openAIModel)
		if err != nil {
			return fake{}, fmt.Errorf("starting the OpenAI fake: %w", err)
		}
		return fake{
			cfg: llm.Config{Provider: provider, Model: "gpt-4o-mini", BaseURL: s.BaseURL(), APIKey: "bench"},
			requests: func() []recorded {
				var out []recorded
				for _, r := range s.Requests() {
					out = append(out, recorded{body: r.Body, prompt: promptOrder(r.Body, "tools", "messages"),
						tokens: r.PromptTokens, cached: r.CachedTokens, conversation: r.HasTool("chat_send")})
				}
				return out
			},
			count: s.RequestCount, close: s.Close,
		}, nil
	}
	s, err := fakeanthropic.Start(anthropicModel)
	if err != nil {
		return fake{}, fmt.Errorf("starting the Anthropic fake: %w", err)
	}
	return fake{
		cfg: llm.Config{Provider: provider, Model: "claude-sonnet-4-5", BaseURL: s.BaseURL(), APIKey: "bench"},
		requests: func() []recorded {
			var out []recorded
			for _, r := range s.Requests() {
				out = append(out, recorded{body: r.Body, prompt: promptOrder(r.Body, "tools", "system", "messages"),
					tokens: r.PromptTokens, cached: r.CacheReadTokens, written: r.CacheCreationTokens, conversation: r.HasTool("chat_send")})
			}
			return out
		},
		count: s.RequestCount, close: s.Close,
	}, nil
}

// run drives one conversation of n turns and returns a row per request.
func run(provider string, n int) ([]row, []recorded, error) {
	dir, err := os.MkdirTemp("", "ship-cache-bench-")
	if err != nil {
		return nil, nil, fmt.Errorf("making a temp folder: %w", err)
	}
	defer os.RemoveAll(dir)
	agentMD := filepath.Join(dir, "Agent.md")
	if err := os.WriteFile(agentMD, []byte(agentText), 0o600); err != nil {
		return nil, nil, fmt.Errorf("writing Agent.md: %w", err)
	}
	f, err := startFake(provider)
	if err != nil {
		return nil, nil, err
	}
	defer f.close()
	turnOf, err := converse(f, dir, agentMD, n)
	if err != nil {
		return nil, nil, err
	}
	rows, summaries := rowsOf(f.requests(), turnOf)
	return rows, summaries, nil
}

// startTools are the tools ship start offers when nothing is configured
// (cmd/ship's toolsFor without exec_shell, skills or MCP servers): the
// model only ever calls chat_send here, but every definition is part of
// every prompt.
func startTools(store chat.Log, d *dispatch.Deliverer, dir string) []agent.Tool {
	ts := append(tools.Default(store, d), tools.Contacts(nil, d)...)
	ts = append(ts, &tools.ChatSendFile{Deliverer: d, Dir: dir}, &tools.ChatAsk{Deliverer: d})
	return append(ts, tools.Tasks(tools.TaskToolsOptions{Dir: filepath.Join(dir, "tasks"), Local: time.UTC})...)
}

// converse runs n turns in one Telegram group chat, the clock a minute
// later each turn, and returns the turn each model request belonged to.
func converse(f fake, dir, agentMD string, n int) ([]int, error) {
	model, err := llm.New(f.cfg)
	if err != nil {
		return nil, fmt.Errorf("building the model client: %w", err)
	}
	store, err := chat.OpenStore(chat.StoreOptions{Dir: filepath.Join(dir, "chats"), Durability: chat.DurabilityNone})
	if err != nil {
		return nil, fmt.Errorf("opening the chat store: %w", err)
	}
	defer store.Close()
	reg := dispatch.NewRegistry()
	reg.Register("telegram", dispatch.DispatcherFunc(func(context.Context, dispatch.RequestContext, string) error { return nil }))
	d := &dispatch.Deliverer{Registry: reg, Store: store}
	start := time.Date(2026, 11, 26, 9, 0, 7, 0, time.UTC)
	var minute atomic.Int64
	rt, err := agent.New(agent.Options{Model: model, Tools: startTools(store, d, dir), Store: store, AgentMDPath: agentMD,
		Stream: true, Now: func() time.Time { return start.Add(time.Duration(minute.Load()) * time.Minute) },
		Logger: zerolog.New(io.Discard)})
	if err != nil {
		return nil, fmt.Errorf("creating the runtime: %w", err)
	}
	var turnOf []int
	for turn := 1; turn <= n; turn++ {
		minute.Store(int64(turn - 1))
		text := question(turn)
		route := dispatch.RequestContext{Channel: "telegram", ChatID: "-100200300", ChatKey: "telegram:chat:-100200300",
			ChatType: "group", UserID: "7001", Username: "dana", MessageID: strconv.Itoa(1000 + turn)}
		ctx := dispatch.WithRequest(context.Background(), route)
		if _, err := store.Append(ctx, chat.ChatLogEntryV1{Channel: route.Channel, ChatID: route.ChatID, ChatKey: route.ChatKey,
			Role: chat.RoleUser, Text: text, MessageID: route.MessageID, UserID: route.UserID}); err != nil {
			return nil, fmt.Errorf("turn %d: logging the message: %w", turn, err)
		}
		res, err := rt.Run(ctx, agent.AgentRunInput{ChatKey: route.ChatKey, Route: route, Instructions: text})
		if err != nil || !res.Success {
			return nil, fmt.Errorf("turn %d: run failed: %v (%s)", turn, err, res.Output)
		}
		for len(turnOf) < f.count() {
			turnOf = append(turnOf, turn)
		}
	}
	return turnOf, nil
}
