package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/policy"
)

type jobsData struct {
	Enabled bool
	Role    string
	// MayCancel is the approvals' rule: the console acts as its role, and
	// only a role that may approve tool calls may stop them.
	MayCancel bool
	Jobs      []engine.Job
	Now       time.Time
}

// handleJobs shows the background jobs, running first, with a cancel
// button for each running one.
func (c *Console) handleJobs(w http.ResponseWriter, r *http.Request) {
	list := c.opts.View.Jobs("")
	d := jobsData{Enabled: list != nil, Role: c.opts.Role, Jobs: list, Now: time.Now()}
	d.MayCancel = c.opts.Role != "" && c.opts.View.RoleMayApprove(c.opts.Role)
	c.render(w, r, "Jobs", d.write)
}

// handleCancelJob stops a running job through the same call as /cancel in
// a chat (engine.Door.CancelJob); its chat is told who cancelled it.
func (c *Console) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	if c.opts.Role == "" || !c.opts.View.RoleMayApprove(c.opts.Role) {
		plain(w, http.StatusForbidden, "The console may not cancel jobs: set server.consoleRole in ship.json to a tool-policy role with \"approve\": true.")
		return
	}
	id := r.PathValue("id")
	_, err := c.opts.Door.CancelJob("", id, "the console ("+c.opts.Role+")")
	switch {
	case err == nil:
		c.log.Info().Str("job", strings.ToUpper(id)).Str("role", c.opts.Role).Msg("job cancelled in the console")
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, engine.ErrJobsOff):
		plain(w, http.StatusConflict, "Background jobs are not enabled here.")
	case errors.Is(err, engine.ErrJobUnknown):
		plain(w, http.StatusNotFound, "There is no job "+policy.VisibleLine(id)+".")
	case errors.Is(err, engine.ErrJobNotRunning):
		plain(w, http.StatusConflict, "Job "+policy.VisibleLine(strings.ToUpper(id))+" is not running.")
	default:
		c.fail(w, r, err)
	}
}

func (d jobsData) write(m *markup) {
	m.raw(`<main id="main" hx-get="/jobs" hx-trigger="every 10s" hx-swap="outerHTML"><h1>Jobs</h1>`)
	switch {
	case !d.Enabled:
		m.raw(`<p class="empty">Background jobs are not enabled here (they come with <code>tools.exec.enabled</code>).</p></main>`)
		return
	case len(d.Jobs) == 0:
		m.raw(`<p class="empty">No background jobs yet. The model starts one with <code>exec_shell</code> and <code>background: true</code>.</p></main>`)
		return
	case !d.MayCancel:
		m.raw(`<p class="warn">The console can show jobs but not cancel them: set <code>server.consoleRole</code> in ship.json to a tool-policy role that may approve.</p>`)
	}
	m.raw(`<div class="scroll"><table><thead><tr><th scope="col">Job</th><th scope="col">Chat</th><th scope="col">State</th>` +
		`<th scope="col">Started</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>`)
	for _, running := range []bool{true, false} {
		for _, j := range d.Jobs {
			if (j.State == "running") != running {
				continue
			}
			m.open("tr", "id", "job-"+j.ID)
			m.raw("<td>")
			m.el("strong", j.ID)
			m.raw("<br>")
			m.el("code", policy.Visible(j.Label))
			m.raw("</td><td>")
			m.el("a", policy.VisibleLine(j.ChatKey), "href", chatURL(j.ChatKey))
			m.raw("</td><td>")
			state := string(j.State)
			if !running {
				state += " (exit " + strconv.Itoa(j.ExitCode) + ")"
			}
			m.el("span", state, "class", when(running, "tag"))
			m.raw("<br>")
			m.el("span", j.Duration(d.Now).Round(time.Second).String(), "class", "muted")
			if j.Lease != nil {
				// The job's lease (seed 001): its TTL is the timeout.
				lease := "lease " + j.Lease.ID
				if j.Lease.Expired {
					lease += " expired"
				}
				m.raw("<br>")
				m.el("span", lease, "class", "muted")
			}
			m.raw("</td><td>")
			m.text(ago(j.Started))
			m.raw("</td><td>")
			if running && d.MayCancel {
				m.el("button", "Cancel", "hx-post", "/console/jobs/"+j.ID+"/cancel", "hx-swap", "none", "data-after", "refresh")
			}
			m.raw("</td></tr>")
		}
	}
	m.raw(`</tbody></table></div></main>`)
}
