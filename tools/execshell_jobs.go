package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/jobs"
)

// maxTimeoutMs is the largest timeoutMs a call may give: a background
// job's maximum when jobs are on and it is longer.
func (t *ExecShell) maxTimeoutMs(set *execSettings) int64 {
	if t.jobs != nil {
		return max(set.maxTimeout, t.jobs.MaxDuration()).Milliseconds()
	}
	return set.maxTimeout.Milliseconds()
}

// backgroundTimeoutText tells the model a background job's timeout.
func (t *ExecShell) backgroundTimeoutText() string {
	if t.jobs == nil {
		return ""
	}
	return fmt.Sprintf(" With background: true the default and maximum is %d.", t.jobs.MaxDuration().Milliseconds())
}

// startJob runs in.Command as a background job of the calling run's chat
// and answers at once with its id. The job keeps everything a foreground
// call has (sandbox, stripped environment, process-group kill, redacted
// output); only its timeout is the job's.
func (t *ExecShell) startJob(ctx context.Context, set *execSettings, in execArgs, logged string) agent.ToolResult {
	if t.jobs == nil {
		return failure("background jobs are not enabled here (tools.jobs); run the command without background")
	}
	route, ok := dispatch.RequestFromContext(ctx)
	if !ok || route.ChatKey == "" {
		return failure("a background job needs a chat to report to; this run has none")
	}
	run, _ := dispatch.RunFrom(ctx)
	timeout := t.jobs.MaxDuration()
	if in.TimeoutMs != nil {
		timeout = min(timeout, time.Duration(math.Trunc(*in.TimeoutMs))*time.Millisecond)
	}
	label := fmt.Sprintf("%s `%s`", ExecShellName, clipText(logged, 200))
	job, err := t.jobs.Start(jobs.Spec{ChatKey: route.ChatKey, Route: route, Identity: run.Identity, Tool: ExecShellName, Label: label},
		timeout, func(jctx context.Context) jobs.Result {
			// The sandbox was checked when the call came in; check again
			// in case it changed, as a foreground call would.
			box := set.sandbox.check(jctx)
			if box.Refusing {
				return jobs.Result{ExitCode: -1, Content: failure(refusal(box)).Content}
			}
			res, code := t.execute(jctx, set, in, logged, box, timeout, false)
			return jobs.Result{OK: res.OK, ExitCode: code, Content: res.Content}
		})
	switch {
	case errors.Is(err, jobs.ErrChatLimit), errors.Is(err, jobs.ErrGlobalLimit):
		return failure(fmt.Sprintf("the job was not started: %v; wait for one to finish or cancel one (/jobs, /cancel ID)", err))
	case err != nil:
		return failure(set.secrets.Redact(fmt.Sprintf("the job could not be started: %v", err)))
	}
	t.log.Info().Str("command", logged).Str("job", job.ID).Str("chatKey", job.ChatKey).Msg("exec_shell: background job started")
	return shellResult(true, map[string]any{
		"job":       job.ID,
		"status":    "started",
		"timeoutMs": timeout.Milliseconds(),
		"note": fmt.Sprintf("The command runs in the background as job %s. Its result will arrive in a later message; "+
			"do not wait for it or poll. The person can see it with /jobs and stop it with /cancel %s.", job.ID, job.ID),
	})
}
