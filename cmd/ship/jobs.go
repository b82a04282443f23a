package main

import (
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// jobsFile is where background jobs are recorded, under .ship.
const jobsFile = "jobs.json"

// openJobs opens the background jobs of exec_shell and of the MCP calls
// that mcp.servers.*.background names (tools.jobs), recorded in
// .ship/jobs.json so that a job running when ship dies is reported as
// interrupted after the restart. Nil when neither needs them or jobs are
// switched off. In a cluster each replica keeps its own file: a replica's
// jobs are its own processes, reported when that replica starts again.
func openJobs(cfg config.Config, log zerolog.Logger) (*jobs.Manager, error) {
	if (!cfg.Tools.Exec.Enabled && !cfg.MCP.HasBackground()) || cfg.Tools.Jobs.Off {
		return nil, nil
	}
	return jobs.Open(jobs.Options{
		Path: cfg.StatePath(jobsFile), PerChat: cfg.Tools.Jobs.PerChat, Max: cfg.Tools.Jobs.Max,
		MaxDuration: cfg.Tools.Jobs.MaxDuration(), Logger: log,
	})
}
