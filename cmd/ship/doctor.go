package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/runtime/config"
)

// Levels of a doctor check: a warning is printed but does not fail the
// run.
const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelFail = "fail"
)

// errDoctorFailed makes `ship doctor` exit 1 once the report is printed.
var errDoctorFailed = errors.New("doctor: a check failed (✗ above)")

// checkResult is one line of `ship doctor`, and one object of --json.
type checkResult struct {
	Check string `json:"check"`
	// OK is false only for a failure: a warning is OK.
	OK     bool   `json:"ok"`
	Level  string `json:"level"`
	Detail string `json:"detail"`
	// Fix is one line saying what to do; "" when nothing is to be done.
	Fix string `json:"fix"`
}

func pass(check, detail string) checkResult {
	return checkResult{Check: check, OK: true, Level: levelOK, Detail: detail}
}

func warn(check, detail, fix string) checkResult {
	return checkResult{Check: check, OK: true, Level: levelWarn, Detail: detail, Fix: fix}
}

func fail(check, detail, fix string) checkResult {
	return checkResult{Check: check, Level: levelFail, Detail: detail, Fix: fix}
}

// line is the result as `ship doctor` prints it.
func (r checkResult) line() string {
	mark := map[string]string{levelOK: "✓", levelWarn: "!", levelFail: "✗"}[r.Level]
	s := fmt.Sprintf("%s %s: %s", mark, r.Check, r.Detail)
	if r.Fix != "" {
		s += " — fix: " + r.Fix
	}
	return s
}

type doctorFlags struct {
	json    bool
	timeout time.Duration
}

func newDoctorCmd() *cobra.Command {
	var f doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor [dir]",
		Short: "Check the configuration and every configured service, each with a one-line fix",
		Long: `doctor loads the project in dir (default: the current folder) as start does (ship.json,
.env, the environment) and checks, live:

  config      ship.json parses and passes start's validation; every platform set up has its token
  state       .ship is writable and its disk is not nearly full
  telegram    getMe, getWebhookInfo, and whether another process polls the bot
  feishu      the tenant access token and the bot's info
  qq          the app access token and the gateway
  model       each configured model: its provider lists models (GET /models) with the key
  mcp         each MCP server starts and lists its tools
  cluster     NATS is reachable and JetStream enabled (cluster mode)

Each check prints one line: ✓ passed, ! warning, ✗ failed, with the fix. The exit status is 1
when a check failed (warnings do not fail). Secrets are never printed.`,
		Example: `  ship doctor
  ship doctor mybot --json
  ship doctor --timeout 30s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if f.timeout <= 0 {
				return fmt.Errorf("--timeout %s: give a positive duration such as 10s", f.timeout)
			}
			results := runDoctor(cmd.Context(), dir, f.timeout)
			if err := printDoctor(cmd.OutOrStdout(), results, f.json); err != nil {
				return fmt.Errorf("printing the report: %w", err)
			}
			for _, r := range results {
				if !r.OK {
					return errDoctorFailed
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print a JSON array of {check, ok, level, detail, fix}")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "time allowed for all live checks together")
	return cmd
}

func printDoctor(w io.Writer, results []checkResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	for _, r := range results {
		if _, err := fmt.Fprintln(w, r.line()); err != nil {
			return err
		}
	}
	return nil
}

// runDoctor loads the configuration and runs every check that applies.
// The live checks run side by side, each bounded by timeout, and are
// reported in a fixed order.
func runDoctor(ctx context.Context, dir string, timeout time.Duration) []checkResult {
	cfg, weakTokens, err := loadStartConfig(dir, startFlags{})
	if err != nil {
		var miss config.MissingCredential
		if errors.As(err, &miss) {
			// The rest of the configuration is fine: report the platform
			// and go on checking everything else.
			cfg, err = config.Load(dir, nil)
		}
		if err != nil {
			return []checkResult{fail("config", scrubConfigError(err),
				"fix what this line names: ship start refuses to run until then")}
		}
	}
	red := newRedactor(cfg.Secrets())
	results := []checkResult{pass("config", fmt.Sprintf("%s loads and is valid", configSource(cfg)))}
	for _, m := range cfg.MissingCredentials() {
		results = append(results, fail(m.Platform, m.Error(), m.Fix()))
	}
	// What ship start warns about in its log.
	for _, setting := range weakTokens {
		results = append(results, warn("api token", setting+" is easy to guess: accepted on loopback only",
			"make one with `openssl rand -hex 32`"))
	}
	results = append(results, checkState(cfg)...)

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Transport: http.DefaultTransport}
	var checks []func() []checkResult
	if a := cfg.Adapters.Telegram; a.On() {
		checks = append(checks, func() []checkResult { return checkTelegram(ctx, a, client) })
	}
	if a := cfg.Adapters.Feishu; a.On() {
		checks = append(checks, func() []checkResult { return checkFeishu(ctx, a, client) })
	}
	if a := cfg.Adapters.QQ; a.On() {
		checks = append(checks, func() []checkResult { return checkQQ(ctx, a, client) })
	}
	checks = append(checks, func() []checkResult { return checkModels(ctx, cfg.LLM, client) })
	if len(cfg.MCP.Servers) > 0 {
		checks = append(checks, func() []checkResult { return checkMCP(ctx, cfg) })
	}
	if cfg.Cluster.On() {
		checks = append(checks, func() []checkResult { return checkCluster(ctx, cfg) })
	}
	out := make([][]checkResult, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = check()
		}()
	}
	wg.Wait()
	for _, rs := range out {
		results = append(results, rs...)
	}
	// Whatever a service answered, no secret and no terminal control
	// sequence leaves through a detail.
	for i := range results {
		results[i].Detail = printable(red.text(results[i].Detail))
		results[i].Fix = printable(red.text(results[i].Fix))
	}
	return results
}

// maxDetail bounds a line: a service's error text can be a whole page.
const maxDetail = 400

// printable keeps s to one line of visible text: control characters
// (escape sequences a hostile server could send to the terminal, newlines)
// become spaces, and a long text is cut.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > maxDetail {
		s = string([]rune(s)[:maxDetail]) + "…"
	}
	return s
}

func configSource(cfg config.Config) string {
	return cfg.Dir + "/" + config.FileName
}

// scrubConfigError keeps the configuration error's own words without the
// ErrInvalid prefix; config errors never carry secrets.
func scrubConfigError(err error) string {
	return strings.TrimPrefix(err.Error(), config.ErrInvalid.Error()+": ")
}

// redactor hides every secret the configuration holds.
type redactor struct{ secrets []string }

func newRedactor(secrets []string) redactor {
	var keep []string
	for _, s := range secrets {
		// A very short "secret" would blank out ordinary words; such
		// values are refused by the checks that matter anyway.
		if len(s) >= 4 {
			keep = append(keep, s)
		}
	}
	return redactor{secrets: keep}
}

func (r redactor) text(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}
