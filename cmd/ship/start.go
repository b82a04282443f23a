package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/contacts"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/memory"
	"github.com/shipmyagent/ship/runtime/metrics"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/questions"
	"github.com/shipmyagent/ship/runtime/queue"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/skills"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/runtime/usage"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/tools"
)

type startFlags struct {
	host    string
	port    int
	offline bool
}

func newStartCmd() *cobra.Command {
	var f startFlags
	cmd := &cobra.Command{
		Use:   "start [dir]",
		Short: "Run the bot: the HTTP API and every enabled platform adapter",
		Long: `start runs ship for the project in dir (default: the current folder). All state lives in
dir/.ship and the agent's instructions in dir/Agent.md, wherever ship was started from.

The model comes from LLM_PROVIDER, LLM_MODEL, LLM_BASE_URL and LLM_API_KEY (or ship.json);
--offline uses the built-in offline model, which needs no key and no network.
A platform adapter starts when its credentials are set (e.g. TELEGRAM_BOT_TOKEN); a platform
with a section in ship.json but no credentials stops start-up, unless its "enabled" is false.
ship doctor checks all of it, and each service, before you start.

SIGINT or SIGTERM stops intake (the API answers 503), lets running messages finish within
shutdown.graceSeconds (default 30) and exits 0; a second signal stops at once.`,
		Example: `  ship start --offline
  ship start mybot --port 8080
  LLM_API_KEY=sk-... ship start mybot`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runStart(cmd.Context(), cmd, dir, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.host, "host", "", "listen address (default 127.0.0.1, or SHIP_HOST)")
	fl.IntVar(&f.port, "port", 0, "listen port (default 3000, or SHIP_PORT; 0 picks the default)")
	fl.BoolVar(&f.offline, "offline", false, "use the built-in offline model (no API key, no network)")
	return cmd
}

func runStart(ctx context.Context, cmd *cobra.Command, dir string, f startFlags) error {
	started := time.Now()
	cfg, weakTokens, err := loadStartConfig(dir, f)
	if err != nil {
		return err
	}
	logDir := ""
	if cfg.Log.File {
		logDir = cfg.StatePath("logs")
	}
	log, closeLog, err := newLogger(cmd.ErrOrStderr(), cfg.Log.Level, logDir)
	if err != nil {
		return err
	}
	defer closeLog()
	warnAboutConfig(log, cfg, weakTokens)

	p, err := newParts(cfg, log)
	if err != nil {
		return err
	}
	p.reload = newReloader(dir, f, cfg, log)
	// Closed after the engine: the running message may still call MCP tools.
	defer p.mcp.close()
	rep, err := joinCluster(ctx, cfg, log)
	if err != nil {
		return err
	}
	cfg = rep.shareFiles(cfg)
	p.book = rep.contacts(p.book)
	p.taskRecords = rep.taskRecords()
	if p.notes, err = newNotes(cfg, rep); err != nil {
		rep.closeUnused()
		return err
	}
	if p.questions, err = rep.questions(cfg); err != nil {
		rep.closeUnused()
		return err
	}
	rep.shareUsage(p.usage)
	opts, err := withProfiles(p.engineOptions(cfg, log), cfg, log)
	if err != nil {
		rep.closeUnused()
		return err
	}
	eng, err := engine.New(rep.engineOptions(opts))
	if err != nil {
		rep.closeUnused()
		return err
	}
	// In cluster mode the group outlives this replica: leave it last.
	defer rep.leave()
	rep.watchPartitions(p.metrics)
	stopMetrics, err := listenMetrics(cfg, p.metrics, log)
	if err != nil {
		_, _ = eng.Close(ctx)
		return err
	}
	defer stopMetrics()
	p.reload.attach(eng, p)
	fr, err := newFront(cfg, eng, p, rep, log, started)
	if err != nil {
		_, _ = eng.Close(ctx)
		return err
	}
	addr := net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_, _ = eng.Close(ctx)
		return fmt.Errorf("listening on %s: %w (is another ship running? pick another with --port)", addr, err)
	}
	return serve(ctx, cmd, running{cfg: cfg, eng: eng, parts: p, front: fr, rep: rep, log: log, ln: ln, started: started})
}

// loadStartConfig reads the project's configuration with the command
// line's flags applied, and checks what start-up needs: a model that can
// answer and API tokens strong enough for where ship listens. It returns
// the settings whose token is weak but accepted (on loopback).
func loadStartConfig(dir string, f startFlags) (config.Config, []string, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return config.Config{}, nil, fmt.Errorf("project folder %s does not exist: create it with `ship init %s`", dir, dir)
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return cfg, nil, err
	}
	if f.host != "" {
		cfg.Server.Host = f.host
	}
	if f.port != 0 {
		cfg.Server.Port = f.port
	}
	if f.offline {
		cfg.LLM = llm.Config{Provider: llm.ProviderOffline}.Normalized()
	}
	if err := cfg.LLM.Validate(); err != nil {
		return cfg, nil, err
	}
	// A platform set up in ship.json without its token would otherwise run
	// as no platform at all, unnoticed.
	if m := cfg.MissingCredentials(); len(m) > 0 {
		return cfg, nil, fmt.Errorf("%w: %w — fix: %s", config.ErrInvalid, m[0], m[0].Fix())
	}
	weakTokens, err := cfg.Server.CheckExposure()
	return cfg, weakTokens, err
}

// warnAboutConfig logs what start-up accepts but a person should fix.
func warnAboutConfig(log zerolog.Logger, cfg config.Config, weakTokens []string) {
	for _, setting := range weakTokens {
		log.Warn().Str("setting", setting).
			Msg("API token is easy to guess: accepted on loopback only; make one with `openssl rand -hex 32`")
	}
	for _, m := range cfg.UnprovenAPIMembers() {
		log.Warn().Str("member", m).Msg("a tools.roles member names an api identity no caller has: " +
			"API callers act as their token's identity (server.tokens), a request's userId is only a label")
	}
}

// parts are what the engine is built from, made before it.
type parts struct {
	catalog     *models.Catalog
	modelName   string // "provider/model", for the log and /api/status
	policy      *config.PolicyFile
	book        *contacts.Book
	skillTools  []agent.Tool
	skillPrompt func() string
	// shell is the one exec_shell: offered when ship.json turns it on, and
	// its secret redaction used for every tool's audit entry either way.
	shell *tools.ExecShell
	mcp   *mcpServers
	// taskRecords, in cluster mode, holds the tasks' slots and runs
	// (task_list reads them there); nil alone.
	taskRecords records.Table
	// questions keeps what chat_ask asked until it is answered.
	questions *questions.Store
	// notes are the long-term notes (memory.go); nil when off.
	notes *memory.Store
	// usage counts tokens per day, chat and person (.ship/usage/).
	usage *usage.Tally
	// jobs runs background jobs (exec_shell's, MCP calls'; jobs.go); nil
	// when off.
	jobs *jobs.Manager
	// metrics are the Prometheus metrics (metrics.go); nil when off.
	metrics *metrics.Set
	// skills are the skill folders; reload puts ship.json's changes of
	// them, the models, MCP and exec_shell in force (reload.go).
	skills *skills.Catalog
	reload *reloader
}

func newParts(cfg config.Config, log zerolog.Logger) (parts, error) {
	p := parts{modelName: cfg.LLM.Provider + "/" + cfg.LLM.Model}
	var err error
	if p.catalog, err = models.New(cfg.LLM); err != nil {
		return p, err
	}
	if p.policy, err = config.NewPolicyFile(cfg, log); err != nil {
		return p, err
	}
	if p.book, err = contacts.Open(cfg.StatePath("contacts.json"), log); err != nil {
		return p, err
	}
	if p.usage, err = usage.Open(cfg.StatePath(usageDir), nil); err != nil {
		return p, err
	}
	if p.skills, p.skillTools, p.skillPrompt, err = newSkills(cfg, log); err != nil {
		return p, err
	}
	if p.jobs, err = openJobs(cfg, log); err != nil {
		return p, err
	}
	p.shell = newExecShell(cfg, p.jobs, log)
	if cfg.Tools.Exec.Enabled {
		// In the background: running bwrap once takes longer than the rest
		// of start-up, and its outcome is logged either way.
		go p.shell.CheckSandbox(context.Background())
	}
	p.mcp = newMCP(cfg, p.jobs, p.shell.Redact, log)
	p.metrics = newMetrics(cfg)
	p.watchMCP()
	return p, nil
}

// engineOptions is the engine as ship.json sets it up.
func (p parts) engineOptions(cfg config.Config, log zerolog.Logger) engine.Options {
	return engine.Options{
		Tools:         toolsFor(cfg, p, log),
		Questions:     p.questions,
		Memory:        p.notes,
		Observe:       p.book.Learn,
		Toolboxes:     p.mcp.toolboxes(),
		Redact:        p.shell.Redact,
		Policy:        p.policy.Current,
		ApprovalsPath: cfg.StatePath("approvals.json"),
		ModelName:     p.modelName,
		ChatsDir:      cfg.StatePath("chats"),
		JournalPath:   cfg.StatePath("pending.jsonl"),
		Durability:    chat.Durability(cfg.Store.Durability),
		Models:        p.catalog,
		AgentMDPath:   cfg.AgentMDPath(),
		History: agent.HistoryLimits{
			MaxChats: cfg.History.MaxChats, MaxMessages: cfg.History.MaxMessages, MaxChars: cfg.History.MaxChars,
		},
		SummaryModel: cfg.History.SummaryModel,
		Queue: queue.Options{
			Capacity: cfg.Queue.Capacity, Concurrency: cfg.Queue.Concurrency, RunTimeout: cfg.RunTimeout(),
		},
		UserLimit:    ingress.UserLimiterOptions{Rate: rate.Limit(float64(cfg.Queue.SenderPerMinute) / 60), Burst: cfg.Queue.SenderBurst},
		SegmentBytes: cfg.Store.SegmentBytes,
		MaxTokens:    cfg.LLM.MaxTokens,
		// Streaming lets SSE clients and `ship chat` see replies as the
		// model writes them.
		Stream: true,
		// The images people send reach a vision-capable model as images.
		Vision: cfg.LLM.VisionCapable(),
		Files:  cfg.FileStore(),
		Logger: log,
		// The skills, listed in every run's system prompt.
		PromptSections: []func() string{p.skillPrompt},

		// Each chat's /model choice; llm.switch says who may switch.
		ModelChoicesPath: cfg.StatePath("models.json"), ModelSwitch: cfg.LLM.Switch,

		// Tokens per day, chat and person, and limits.tokens.
		Usage: p.usage, TokenBudget: cfg.Limits.Tokens.Budget(),

		// exec_shell's background jobs; their results come back as turns.
		Jobs: p.jobs,
		// agent_spawn's sub-agents run as such jobs (subagents.go).
		SubAgents: subAgentOptions(cfg),
		Metrics:   p.metrics,
	}
}

// front is what takes messages in: the platforms, the scheduler and the
// HTTP server.
type front struct {
	platforms []adapters.Adapter
	sched     *tasks.Scheduler
	srv       *server.Server
}

func newFront(cfg config.Config, eng *engine.Engine, p parts, rep *replica, log zerolog.Logger, started time.Time) (front, error) {
	var fr front
	platforms, webhooks, err := newAdapters(cfg, eng, log)
	if err != nil {
		return fr, err
	}
	rep.prepare(platforms)
	meterAdapters(platforms, p.metrics)
	fr.platforms = platforms
	if fr.sched, err = newScheduler(cfg, eng, rep.taskRecords(), log); err != nil {
		return fr, err
	}
	fr.srv, err = server.New(server.Options{
		Door: eng, View: eng, Token: cfg.Server.Token, Tokens: namedTokens(cfg.Server.Tokens), Version: version, Started: started, Model: p.modelName,
		Adapters: func() []server.AdapterStatus { return adapterStatus(platforms) }, Webhooks: webhooks, Logger: log,
		MCP:         p.mcp.status,
		CORSOrigins: cfg.Server.CORSOrigins, Tasks: fr.sched, Notes: consoleNotes(p.notes),
		Console: cfg.Server.ConsoleOn(), ConsoleRole: cfg.Server.ConsoleRole, Files: keptFiles(cfg), Redact: p.shell.Redact,
		Cluster: rep.status(), Metrics: mainMetrics(cfg, p.metrics), Config: p.reload.status,
	})
	return fr, err
}

// running is a started ship, from listening to shutdown.
type running struct {
	cfg     config.Config
	eng     *engine.Engine
	parts   parts
	front   front
	rep     *replica
	log     zerolog.Logger
	ln      net.Listener
	started time.Time
}

// serve answers HTTP, recovers what the last stop left, starts the
// platforms, the contacts book and the scheduler, and runs until ctx ends
// (SIGTERM, SIGINT) or the HTTP server fails; then it shuts down in order.
func serve(ctx context.Context, cmd *cobra.Command, r running) error {
	log, eng := r.log, r.eng
	httpSrv := &http.Server{Handler: r.front.srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	httpSrv.RegisterOnShutdown(r.front.srv.CloseStreams)
	serveErr := make(chan error, 1)
	go func() { serveErr <- httpSrv.Serve(r.ln) }()

	log.Info().Str("model", r.parts.modelName).Str("project", r.cfg.Dir).Msg("model ready")
	log.Info().Str("addr", "http://"+r.ln.Addr().String()).Bool("auth", r.cfg.Server.AuthOn()).Msg("http api listening")
	adapterCtx, stopAdapters := context.WithCancel(context.Background())
	// Its own context, not the adapters': MCP sessions outlive the
	// platforms at shutdown, until the running message is done (the
	// deferred close).
	r.parts.mcp.start(context.Background(), log)
	go r.parts.reload.run(adapterCtx, r.front.platforms)
	// Recovery comes before the platforms receive anything: a chat's
	// interrupted messages are queued ahead of its new ones, and a platform
	// re-delivering one of them finds it already taken. The dispatchers
	// are registered (by the adapters' New), so replies can go out.
	if n := eng.Recover(ctx); n > 0 {
		log.Info().Int("messages", n).Msg("recovery: answering messages accepted before the last stop")
	}
	if err := r.rep.start(eng, r.cfg.Queue.Concurrency); err != nil {
		stopAdapters()
		_, _ = eng.Close(ctx)
		return err
	}
	adaptersDone := runAdapters(adapterCtx, r.front.platforms, r.rep, log)
	contactsDone := make(chan struct{})
	go func() { r.parts.book.Run(adapterCtx); close(contactsDone) }()
	defer func() {
		<-contactsDone
		// Messages taken while the engine drained are in the book too.
		if err := r.parts.book.Flush(); err != nil {
			log.Error().Err(err).Msg("saving contacts")
		}
	}()
	schedDone := runScheduler(adapterCtx, r.front.sched, r.rep) // after Recover: interrupted runs go first
	r.announce(cmd.OutOrStdout())

	stopIntake := func() {
		// Platforms first: long polls and websockets end, so nothing new
		// is taken while the running message finishes.
		stopAdapters()
		<-adaptersDone
		<-schedDone
	}
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		stopIntake()
		r.rep.stopTaking()
		_, _ = eng.Close(context.Background())
		return fmt.Errorf("http server stopped: %w", err)
	}
	return r.drain(ctx, httpSrv, stopIntake) // drain.go
}

// announce tells the log and the person who started ship what runs.
func (r running) announce(w io.Writer) {
	for _, a := range adapterStatus(r.front.platforms) {
		r.log.Info().Str("channel", a.Name).Str("state", a.State).Msg("adapter enabled")
	}
	printReady(w, r.ln.Addr().String(), r.parts.modelName, r.cfg.Dir, time.Since(r.started), r.cfg.Server.ConsoleOn())
	if r.cfg.Tools.Exec.Enabled {
		fmt.Fprintf(w, "exec_shell: %s\n", r.parts.shell.SandboxStatus().Summary())
	}
}

// newExecShell builds exec_shell as ship.json sets it up: in the project
// folder, sandboxed with ship's own files hidden, and without the secrets
// ship knows in its environment or output.
func newExecShell(cfg config.Config, jobs *jobs.Manager, log zerolog.Logger) *tools.ExecShell {
	def, max := cfg.Tools.Exec.ExecTimeouts()
	// This binary is each unsandboxed command's watchdog (main.go): it
	// kills the command's group should ship die first. Without a path to
	// it, commands run as before.
	self, err := os.Executable()
	if err != nil {
		log.Warn().Err(err).Msg("exec_shell: no watchdog for commands (ship cannot find its own binary)")
		self = ""
	}
	return tools.NewExecShell(tools.ExecShellOptions{
		Dir: cfg.Dir, DefaultTimeout: def, MaxTimeout: max, MaxOutput: cfg.Tools.Exec.MaxOutputBytes,
		DropEnv: config.SecretEnv, Secrets: cfg.Secrets(), Logger: log,
		Sandbox: tools.SandboxMode(cfg.Tools.Exec.SandboxMode()), Network: cfg.Tools.Exec.Network,
		Hidden: config.PrivateNames(), Jobs: jobs, Watchdog: self,
	})
}

// toolsFor returns the tools the model may be offered: the chat tools,
// the contact tools, extra (the skills), the task tools, and shell when
// ship.json switches it on (the policy then decides who may run what).
func toolsFor(cfg config.Config, p parts, log zerolog.Logger) func(chat.Log, *dispatch.Deliverer) []agent.Tool {
	return func(store chat.Log, d *dispatch.Deliverer) []agent.Tool {
		ts := append(tools.Default(store, d), tools.Contacts(p.book, d)...)
		ts = append(ts, chatShowTools(cfg, p.questions, d)...)
		ts = append(ts, p.skillTools...)
		ts = append(ts, taskTools(cfg, p.taskRecords)...)
		ts = append(ts, notesTools(p.notes)...)
		if cfg.Tools.Exec.Enabled {
			ts = append(ts, p.shell)
			log.Info().Str("tool", tools.ExecShellName).Str("dir", cfg.Dir).Msg("exec_shell is on; the tool policy decides who may run what")
		}
		return ts
	}
}

func printReady(w io.Writer, addr, model, dir string, took time.Duration, console bool) {
	fmt.Fprintf(w, "ship %s is running (model %s, project %s, ready in %s)\n", version, model, dir, took.Round(time.Millisecond))
	if console {
		fmt.Fprintf(w, "Open the console: http://%s/\n", addr)
	}
	fmt.Fprintf(w, "Send it a message:\n  curl -s http://%s/api/execute -H 'Content-Type: application/json' -d '{\"instructions\":\"hello\"}'\n", addr)
	fmt.Fprintf(w, "Press Ctrl+C to stop.\n")
}

// adapterStatus reports the api channel and each running platform adapter.
func adapterStatus(running []adapters.Adapter) []server.AdapterStatus {
	out := []server.AdapterStatus{{Name: chat.ChannelAPI, State: "running", Detail: "POST /api/execute"}}
	for _, a := range running {
		out = append(out, a.Status())
	}
	return out
}

// namedTokens hands server.tokens to the server.
func namedTokens(in []config.NamedToken) []server.NamedToken {
	out := make([]server.NamedToken, 0, len(in))
	for _, t := range in {
		out = append(out, server.NamedToken{Name: t.Name, Token: t.Token, Identity: t.Identity})
	}
	return out
}
