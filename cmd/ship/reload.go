package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/server"
	"github.com/shipmyagent/ship/tools"
)

// reloadPoll is how often ship.json and .env are looked at. A change is
// taken once the file has stood still for one look, so a reload never
// reads a file an editor is still writing.
//
// Polling rather than inotify (fsnotify): one stat of two files every two
// seconds costs nothing, needs no dependency, and sees every way a file
// is replaced (an editor's rename, a Kubernetes ConfigMap's symlink swap,
// a bind mount where inotify events never arrive), which a watch on the
// file misses and a watch on the folder must untangle.
const reloadPoll = 2 * time.Second

// reloader reads ship.json (and .env) again when they change or on
// SIGHUP, and puts what changed in force without dropping a running turn:
// the models (the next turn uses the new catalog; a running one keeps its
// model), the MCP servers, exec_shell's settings and jobs limits, the
// skills folders and the platforms' allowlists.
// The tool policy and Agent.md reload by themselves. A file that does not
// load keeps the last good configuration and says why: in the log, as an
// error event and in /api/status and the console. One reload runs at a
// time.
type reloader struct {
	dir   string
	flags startFlags
	log   zerolog.Logger
	poll  time.Duration
	hup   chan os.Signal

	// What a reload changes, set by attach and run.
	eng       *engine.Engine
	p         *parts // a copy: the parts are pointers to what reloads
	platforms []adapters.Adapter

	reloadMu sync.Mutex // one reload at a time
	started  config.Config
	cur      config.Config
	applied  stamps // the files as the configuration in force was read
	seen     stamps // the files at the last look

	mu        sync.Mutex // guards what status reads
	loadedAt  time.Time
	lastErr   string
	lastErrAt time.Time
	restart   []string
}

// stamps are ship.json's and .env's size and modification time.
type stamps [2]stamp

type stamp struct {
	exists bool
	size   int64
	mod    time.Time
}

// newReloader starts listening for SIGHUP (a signal that would otherwise
// end the process) for the project in dir, whose configuration in force
// is cfg, as loadStartConfig(dir, flags) read it.
func newReloader(dir string, flags startFlags, cfg config.Config, log zerolog.Logger) *reloader {
	r := &reloader{dir: cfg.Dir, flags: flags, log: log.With().Str("component", "config").Logger(), poll: reloadPoll,
		hup: make(chan os.Signal, 1), started: cfg, cur: cfg, loadedAt: time.Now()}
	if r.dir == "" {
		r.dir = dir
	}
	r.applied = r.look()
	r.seen = r.applied
	signal.Notify(r.hup, syscall.SIGHUP)
	return r
}

// attach names what reloads change: the engine's models and the parts'
// MCP servers, exec_shell and skills.
func (r *reloader) attach(eng *engine.Engine, p parts) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	r.eng, r.p = eng, &p
}

// run reloads on SIGHUP and when the files change, until ctx ends; the
// platforms running take their options from each reload.
func (r *reloader) run(ctx context.Context, platforms []adapters.Adapter) {
	defer signal.Stop(r.hup)
	r.reloadMu.Lock()
	r.platforms = platforms
	r.reloadMu.Unlock()
	tick := time.NewTicker(r.poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.hup:
			_ = r.reload("SIGHUP")
		case <-tick.C:
			r.pollOnce()
		}
	}
}

// pollOnce reloads when the files differ from those in force and have not
// changed since the last look.
func (r *reloader) pollOnce() {
	now := r.look()
	r.reloadMu.Lock()
	settled := now == r.seen && now != r.applied
	r.seen = now
	r.reloadMu.Unlock()
	if settled {
		_ = r.reload("file change")
	}
}

// look stamps the files.
func (r *reloader) look() stamps {
	var out stamps
	for i, name := range []string{config.FileName, config.EnvFileName} {
		if st, err := os.Stat(filepath.Join(r.dir, name)); err == nil {
			out[i] = stamp{exists: true, size: st.Size(), mod: st.ModTime()}
		}
	}
	return out
}

// reload reads the configuration again and puts its changes in force, or
// refuses it whole and keeps the last good one. trigger says what asked
// (for the log).
func (r *reloader) reload(trigger string) error {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	files := r.look() // before reading: a write meanwhile is seen next time
	r.seen = files
	log := r.log.With().Str("trigger", trigger).Logger()
	next, cat, err := r.load()
	if err != nil {
		r.refuse(log, files, err)
		return err
	}
	changed, err := config.Diff(r.cur, next)
	if err != nil {
		r.refuse(log, files, err)
		return err
	}
	sinceStart, err := config.Diff(r.started, next)
	if err != nil {
		r.refuse(log, files, err)
		return err
	}
	restart := needsRestart(sinceStart, next)
	r.applied, r.cur = files, next
	r.mu.Lock()
	hadErr := r.lastErr != ""
	r.loadedAt, r.lastErr, r.lastErrAt, r.restart = time.Now(), "", time.Time{}, restart
	r.mu.Unlock()
	if len(changed) == 0 {
		if hadErr {
			log.Info().Msg("ship.json is valid again; nothing changed from the configuration in force")
		} else {
			log.Debug().Msg("configuration read again; nothing changed")
		}
		return nil
	}
	r.apply(log, next, cat, changed)
	pending := needsRestart(changed, next)
	log.Info().Strs("changed", changed).Msg("configuration reloaded")
	if len(pending) > 0 {
		log.Warn().Strs("settings", pending).Msg("a changed setting needs a restart to take effect; the rest is in force")
	}
	if r.eng != nil {
		r.eng.ConfigReloaded(changed, pending)
	}
	return nil
}

// needsRestart is config.NeedsRestart plus history.summaryModel when the
// model it names changed: the summaries keep the client built at start.
func needsRestart(changed []string, cfg config.Config) []string {
	out := config.NeedsRestart(changed)
	if s := cfg.History.SummaryModel; s != "" && config.Changed(changed, "llm.models."+s) && !slices.Contains(out, "history.summaryModel") {
		out = append(out, "history.summaryModel")
	}
	return out
}

// load reads the configuration as start-up would, with the command line's
// flags, and builds what must work before anything is changed: the model
// catalog, and the names other settings give its models.
func (r *reloader) load() (config.Config, *models.Catalog, error) {
	next, _, err := loadStartConfig(r.dir, r.flags)
	if err != nil {
		return next, nil, err
	}
	cat, err := models.New(next.LLM)
	if err != nil {
		return next, nil, err
	}
	if s := next.History.SummaryModel; s != "" {
		if _, ok := cat.Get(s); !ok {
			return next, nil, fmt.Errorf("%w: history.summaryModel: no model %q in llm.models", config.ErrInvalid, s)
		}
	}
	return next, cat, nil
}

// refuse keeps the configuration in force and says why, once per state of
// the files: in the log (one line naming the setting), as an error event
// and in the status.
func (r *reloader) refuse(log zerolog.Logger, files stamps, err error) {
	r.applied = files // not again until the files change (or SIGHUP)
	why := err.Error()
	if r.p != nil && r.p.shell != nil {
		why = r.p.shell.Redact(why)
	}
	r.mu.Lock()
	r.lastErr, r.lastErrAt = why, time.Now()
	r.mu.Unlock()
	log.Error().Str("error", why).Bool("invalid", errors.Is(err, config.ErrInvalid)).
		Msg("ship.json not reloaded: keeping the last good configuration until it is fixed")
	if r.eng != nil {
		r.eng.ConfigRefused("ship.json not reloaded (the last good configuration stays in force): " + why)
	}
}

// apply puts the changed live settings of next in force. Each part takes
// its own from the next turn or call on; what runs keeps what it started
// with.
func (r *reloader) apply(log zerolog.Logger, next config.Config, cat *models.Catalog, changed []string) {
	if r.eng == nil || r.p == nil {
		return
	}
	if config.Changed(changed, "llm") {
		if err := r.eng.SetModels(cat, next.LLM.Provider+"/"+next.LLM.Model, next.LLM.Switch); err != nil {
			log.Error().Err(err).Msg("models not reloaded")
		} else {
			log.Info().Str("model", next.LLM.Provider+"/"+next.LLM.Model).Strs("models", cat.Names()).
				Msg("models reloaded: the next turn uses them; running turns finish on theirs")
		}
	}
	if config.Changed(changed, "mcp") {
		r.p.mcp.update(next, log)
	}
	if config.Changed(changed, "tools.exec") || config.Changed(changed, "llm") || config.Changed(changed, "adapters") {
		// Secrets live in those sections too: exec_shell hides the new
		// ones from now on (and keeps hiding the old).
		def, max := next.Tools.Exec.ExecTimeouts()
		r.p.shell.Update(tools.ExecShellOptions{DefaultTimeout: def, MaxTimeout: max, MaxOutput: next.Tools.Exec.MaxOutputBytes,
			Sandbox: tools.SandboxMode(next.Tools.Exec.SandboxMode()), Network: next.Tools.Exec.Network, Secrets: next.Secrets()})
	}
	if config.Changed(changed, "adapters") {
		for _, a := range r.platforms {
			if rc, ok := a.(reconfigurer); ok {
				rc.Reconfigure(next)
			}
		}
	}
	if config.Changed(changed, "tools.jobs") && r.p.jobs != nil {
		j := next.Tools.Jobs
		r.p.jobs.SetLimits(j.PerChat, j.Max, j.MaxDuration())
	}
	if config.Changed(changed, "skills") && r.p.skills != nil {
		if err := r.p.skills.SetPaths(next.Skills.Paths); err != nil {
			log.Error().Err(err).Msg("skills.paths not reloaded")
		}
	}
}

// reconfigurer is a platform adapter whose allowlists and formatting
// switches a reload changes.
type reconfigurer interface {
	Reconfigure(cfg config.Config)
}

// status is ship.json's reload state, for /api/status and the console.
func (r *reloader) status() server.ConfigStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := server.ConfigStatus{LoadedAt: r.loadedAt, LastError: r.lastErr, NeedsRestart: append([]string(nil), r.restart...)}
	if r.lastErr != "" {
		at := r.lastErrAt
		cs.LastErrorAt = &at
	}
	return cs
}
