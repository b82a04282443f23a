package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/internal/shipclient"
	"github.com/shipmyagent/ship/runtime/chat"
)

// defaultChatURL is where `ship start` listens unless told otherwise.
const defaultChatURL = "http://127.0.0.1:3000"

// Bounds of the short calls; a streamed turn has none (it may wait in the
// queue), only the client's idle timeout.
const (
	healthTimeout = 5 * time.Second
	callTimeout   = 15 * time.Second
)

type chatFlags struct {
	url, token, chat string
	plain            bool
}

func newChatCmd() *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to a running ship from the terminal",
		Long: `chat is a terminal client for a running ship (see ship start). Each message you send is a
turn in the API chat --chat (chatKey api:chat:<chat>): the reply streams in as the model writes it,
each tool call shows as one line, and a metrics line (time, tool calls, tokens) ends the turn.
The chat's background jobs show a line when they start and when they end ("⚙ job J3 done after
20s (exit 0)"), read from the chat's event stream.

In a terminal: Enter sends, Alt+Enter or Ctrl+J adds a line (so does a line ending with \),
Up/Down recall earlier input, Esc stops waiting for a reply, Ctrl+C quits. When the server goes
away, chat keeps what you typed and reconnects with backoff (1, 2, 4 … 30 s). Finished replies
are rendered as Markdown in the GLAMOUR_STYLE style (dark, light, notty…; default dark).

Without a terminal (stdin or stdout piped) chat reads stdin line by line, a line ending with \
continuing on the next, and prints plain lines: the reply, the tool lines, then a metrics line
starting with "— ". It exits 0 on /quit or end of input; it gives up with exit status 1 when the
server stays unreachable for 60 s or rejects the token.

Commands: /history [n]  /info  /clear  /help  /quit`,
		Example: `  ship chat
  ship chat --url http://127.0.0.1:8080 --chat alice
  SHIP_API_TOKEN=s3cret ship chat --url https://bot.example.com
  printf 'hello\n/history 5\n' | ship chat`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runChat(cmd.Context(), cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "ship's address (default "+defaultChatURL+", or SHIP_URL)")
	fl.StringVar(&f.token, "token", "", "API token, if the server has one (default: SHIP_API_TOKEN)")
	fl.StringVar(&f.chat, "chat", "cli", "chat id: the conversation to talk in (its chatKey is api:chat:<id>)")
	fl.BoolVar(&f.plain, "plain", false, "print plain lines even in a terminal")
	return cmd
}

// chatSession is what both front ends share.
type chatSession struct {
	client *shipclient.Client
	url    string
	chatID string
	// chatKey is the chat's key in the api channel (api:chat:<chatID>).
	chatKey string
}

func runChat(ctx context.Context, cmd *cobra.Command, f chatFlags) error {
	url := firstNonEmpty(f.url, os.Getenv("SHIP_URL"), defaultChatURL)
	token := firstNonEmpty(f.token, os.Getenv("SHIP_API_TOKEN"))
	key, err := chat.APIChatKey(f.chat)
	if err != nil {
		return fmt.Errorf("--chat %w", err)
	}
	client, err := shipclient.New(shipclient.Options{BaseURL: url, Token: token, HTTPClient: newChatHTTPClient()})
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	s := chatSession{client: client, url: client.BaseURL(), chatID: f.chat, chatKey: key}

	in, out := cmd.InOrStdin(), cmd.OutOrStdout()
	if !f.plain && isTerminal(in) && isTerminal(out) {
		st, err := s.status(ctx)
		if err != nil && !shipclient.IsUnreachable(err) {
			return s.setupError(err)
		}
		// An unreachable server is not fatal here: the UI shows it
		// reconnecting, and what the user types meanwhile is kept.
		return runChatTUI(ctx, s, in.(*os.File), out.(*os.File), st, err)
	}
	p := &plainChat{
		chatSession: s, in: in, out: out, errOut: cmd.ErrOrStderr(),
		now: time.Now, sleep: sleepCtx, jitter: rand.Float64,
	}
	return p.run(ctx)
}

// status asks the server for its status within callTimeout.
func (s chatSession) status(ctx context.Context) (*shipclient.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	st, err := s.client.Status(ctx)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// messages reads the last n messages of the chat within callTimeout,
// leaving out the entries that only count a run's tokens (every run
// leaves one): /history shows the conversation.
func (s chatSession) messages(ctx context.Context, n int) ([]shipclient.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	all, err := s.client.Messages(ctx, s.chatKey, 2*n+8)
	if err != nil {
		return nil, err
	}
	msgs := all[:0]
	for _, m := range all {
		if !m.IsUsage() {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	return msgs, nil
}

// healthy checks GET /health within healthTimeout.
func (s chatSession) healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	return s.client.Health(ctx)
}

// setupError words an error that ends the session.
func (s chatSession) setupError(err error) error {
	if errors.Is(err, shipclient.ErrUnauthorized) {
		return fmt.Errorf("%s rejected the API token: pass the right one with --token or SHIP_API_TOKEN", s.url)
	}
	return fmt.Errorf("talking to %s: %w", s.url, err)
}

// newChatHTTPClient bounds connecting but not the answer: a streamed turn
// lasts as long as the run.
func newChatHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: healthTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        4,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// writeLines prints lines to w, one per line.
func writeLines(w io.Writer, lines ...string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
