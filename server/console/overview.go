package console

import (
	"net/http"
	"time"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/mcp"
)

type overviewData struct {
	Version   string
	Uptime    string
	Started   time.Time
	Models    []modelRow
	Adapters  []adapters.Status
	MCP       []mcp.ServerStatus
	Waiting   int
	Running   []string
	Capacity  int
	Workers   int
	Turns     int
	Errors    int
	Approvals int
	Young     bool // up for less than the hour the counts cover
	Config    *ConfigStatus
}

type modelRow struct {
	Name, Provider, Model string
	Default               bool
}

// handleOverview shows the process at a glance; its main part reloads
// itself every few seconds.
func (c *Console) handleOverview(w http.ResponseWriter, r *http.Request) {
	view := c.opts.View
	st := view.QueueStats()
	d := overviewData{
		Version: c.opts.Version, Started: c.opts.Started, Uptime: uptime(time.Since(c.opts.Started)),
		Waiting: st.Waiting, Running: st.RunningChatKeys, Capacity: st.Capacity, Workers: st.Concurrency,
	}
	d.Turns, d.Errors = c.activity.lastHour()
	d.Young = time.Since(c.opts.Started) < time.Hour
	// Only names and the provider/model pair: a model's settings hold its key.
	for _, m := range view.Models().List() {
		d.Models = append(d.Models, modelRow{Name: m.Name, Provider: m.Config.Provider, Model: m.Config.Model, Default: m.Default})
	}
	if c.opts.Adapters != nil {
		for _, a := range c.opts.Adapters() {
			a.Detail = c.opts.Redact(a.Detail)
			d.Adapters = append(d.Adapters, a)
		}
	}
	if c.opts.MCP != nil {
		for _, s := range c.opts.MCP() {
			s.LastError = c.opts.Redact(s.LastError)
			d.MCP = append(d.MCP, s)
		}
	}
	if c.opts.Config != nil {
		cs := c.opts.Config()
		d.Config = &cs
	}
	pending, _ := view.Pending("")
	d.Approvals = len(pending)
	c.render(w, r, "Overview", d.write)
}
