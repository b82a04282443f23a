package main

import (
	"context"

	"github.com/rs/zerolog"

	// A task names its IANA time zone; minimal machines and containers
	// often lack the system's zone files, and a task that cannot load its
	// zone never runs. The embedded copy costs about 450 KB.
	_ "time/tzdata"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/tools"
)

// taskDir is the project's task folder.
func taskDir(cfg config.Config) string { return cfg.StatePath("tasks") }

// taskTools are task_create, task_list and task_delete on the project's
// task folder (the tool policy denies them until a rule allows them);
// shared, in cluster mode, is where task_list finds the runs.
func taskTools(cfg config.Config, shared records.Table) []agent.Tool {
	return tools.Tasks(tools.TaskToolsOptions{Dir: taskDir(cfg), Records: shared})
}

// newScheduler builds the scheduler of the project's tasks: runs go
// through the engine's front door (logged, journaled, on the one queue) and
// find their chat's route in its chat log, posting there the way the chat's
// platform says (its registered dispatcher). It reads nothing yet. shared,
// in cluster mode, holds the tasks' slots and runs instead of state.json.
func newScheduler(cfg config.Config, eng *engine.Engine, shared records.Table, log zerolog.Logger) (*tasks.Scheduler, error) {
	return tasks.New(tasks.Options{Dir: taskDir(cfg), Submitter: eng, History: eng, Dispatchers: eng, Records: shared, Logger: log})
}

// runScheduler runs s until ctx ends; the channel closes once it has
// stopped, so the engine closes only after the last run was queued.
// In cluster mode only the replica holding the scheduler's lease runs it,
// so a task runs once per slot in the group.
func runScheduler(ctx context.Context, s *tasks.Scheduler, rep *replica) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rep.hold(ctx, "scheduler", func(ctx context.Context) error { s.Run(ctx); return nil })
	}()
	return done
}
