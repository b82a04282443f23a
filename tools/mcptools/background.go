package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/jobs"
	"github.com/shipmyagent/ship/runtime/mcp"
)

// Options are the toolbox's background jobs.
type Options struct {
	// Jobs runs the background calls; nil runs every call in the turn
	// (tools.jobs.off).
	Jobs *jobs.Manager
	// Background says whether every call of the server's tool (its own
	// name) runs as a background job: mcp.servers.<name>.background.
	Background func(server, tool string) bool
	// Redact takes secrets out of a job's label, which /jobs, the console
	// and job events show.
	Redact func(string) string
}

// background is how a background-listed tool starts its jobs.
type background struct {
	jobs   *jobs.Manager
	redact func(string) string
}

// background returns what t's calls need to run as jobs, or nil when they
// run in the turn.
func (b *Toolbox) background(t mcp.Tool) *background {
	o := b.opts
	if o.Jobs == nil || o.Background == nil || !o.Background(t.Server, t.Name) {
		return nil
	}
	redact := o.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &background{jobs: o.Jobs, redact: redact}
}

// labelArgs bounds how much of a call's arguments its job's label shows.
const labelArgs = 200

// startJob runs the call as a background job of the calling run's chat and
// answers at once with its id. The policy has judged (and, if it had to,
// an approver approved) the call before Call was reached, exactly as for a
// call in the turn. The job's timeout is tools.jobs.maxSeconds, not the
// server's timeoutSeconds: the operator listed the tool because its calls
// are long. Cancelling the job cancels the call's context, and the go-sdk
// client then sends notifications/cancelled to the server.
func (t *Tool) startJob(ctx context.Context, args json.RawMessage) agent.ToolResult {
	route, ok := dispatch.RequestFromContext(ctx)
	if !ok || route.ChatKey == "" {
		return failure("this tool runs as a background job, which needs a chat to report to; this run has none")
	}
	run, _ := dispatch.RunFrom(ctx)
	args = append(json.RawMessage(nil), args...) // the job outlives the turn's buffers
	shown := string(args)
	var compact bytes.Buffer
	if json.Compact(&compact, args) == nil {
		shown = compact.String() // one line, as /jobs shows it
	}
	label := fmt.Sprintf("%s `%s`", t.PolicyName(), clipText(t.bg.redact(shown), labelArgs))
	timeout := t.bg.jobs.MaxDuration()
	job, err := t.bg.jobs.Start(jobs.Spec{ChatKey: route.ChatKey, Route: route, Identity: run.Identity, Tool: t.PolicyName(), Label: label},
		timeout, func(jctx context.Context) jobs.Result {
			res, err := t.src.CallToolWithin(jctx, t.tool.Server, t.tool.Name, args, timeout)
			out := t.result(res, err)
			return jobs.Result{OK: out.OK, ExitCode: exitCode(res, err), Content: t.bg.redact(out.Content)}
		})
	switch {
	case errors.Is(err, jobs.ErrChatLimit), errors.Is(err, jobs.ErrGlobalLimit):
		return failure(fmt.Sprintf("the job was not started: %v; wait for one to finish or cancel one (/jobs, /cancel ID)", err))
	case err != nil:
		return failure(fmt.Sprintf("the job could not be started: %v", err))
	}
	t.log.Info().Str("tool", t.PolicyName()).Str("job", job.ID).Str("chatKey", job.ChatKey).Msg("mcp tool call started as a background job")
	b, err := json.Marshal(map[string]any{
		"success":   true,
		"job":       job.ID,
		"status":    "started",
		"timeoutMs": timeout.Milliseconds(),
		"note": fmt.Sprintf("The call runs in the background as job %s. Its result will arrive in a later message; "+
			"do not wait for it or poll. The person can see it with /jobs and stop it with /cancel %s.", job.ID, job.ID),
	})
	if err != nil {
		return failure("the job started but its answer could not be encoded")
	}
	return agent.ToolResult{Content: string(b), OK: true}
}

// exitCode stands in for a process's exit code, which an MCP call has not:
// 0 when the tool answered, 1 when it answered with an error, -1 when no
// answer came (cancelled, timed out, server down), as for a killed
// command.
func exitCode(res mcp.Result, err error) int {
	switch {
	case err != nil:
		return -1
	case res.IsError:
		return 1
	}
	return 0
}

// clipText cuts s to n bytes at a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
