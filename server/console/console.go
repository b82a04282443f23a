// Package console is ship's web console: server-rendered pages (Overview,
// Chats, Chat, Approvals, Tasks, Notes, Tools) built from html/template and
// embedded assets, with live parts fed by the event stream. It needs no
// front-end toolchain: the one library it uses, htmx 2.0.8 (0BSD), is
// vendored under static/.
//
// Access: with an API token the console asks for it once on a login page
// and keeps an HttpOnly, SameSite=Strict session cookie; without one it
// answers only requests made to and from loopback, as the API does. Every
// state-changing request carries the session's CSRF token.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/adapters"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/mcp"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/server/internal/throttle"
)

//go:embed static
var staticFS embed.FS

// TaskService is the scheduled tasks as the console (and the API) show
// them: the scheduler (tasks.Scheduler).
type TaskService interface {
	// List is every task file: schedule, next and last run, or why the
	// file is invalid.
	List(ctx context.Context) ([]tasks.Status, error)
	// RunNow queues a run of the task now and returns its id (the taskId
	// of its events).
	RunNow(ctx context.Context, name string) (string, error)
}

// Options configure a Console.
type Options struct {
	// Door is how the console acts on the core: the front door for its
	// messages, the event stream it counts turns from, approvals;
	// required (the Engine).
	Door engine.Door
	// View is what the console shows of the core; required (the Engine).
	View engine.View
	// Token is the API token; "" serves the console on loopback only.
	Token   string
	Version string
	Started time.Time
	// Adapters and MCP report the platform adapters' and MCP servers'
	// state; either may be nil.
	Adapters func() []adapters.Status
	MCP      func() []mcp.ServerStatus
	// Config reports ship.json's reload state (the Overview's status
	// line), its LastError already without secrets; nil shows none.
	Config func() ConfigStatus
	// Tasks lists and runs scheduled tasks; nil shows none.
	Tasks TaskService
	// Notes shows and edits the long-term notes; nil: the Notes page says
	// they are off.
	Notes NotesService
	// Events serves the event stream of one chat ("" for every chat) as
	// server-sent events: the API's own stream, behind the console's
	// session instead of the bearer token.
	Events func(w http.ResponseWriter, r *http.Request, chatKey string)
	// Role is the tool-policy role the console's user acts as when it
	// answers approvals; "" lets the console show approvals but not decide.
	Role string
	// Files is where received files are kept (images are shown from
	// it); nil shows none.
	Files *media.Store
	// Redact removes known secrets from text the console did not get from
	// a chat log (adapter and MCP errors); nil shows such text as it is.
	Redact func(string) string
	// MaxMessageChars caps a message sent from the console; 0 → 10,000.
	MaxMessageChars int
	// Throttle counts wrong tokens at the login per address; the server
	// shares its own, so the API and the login are one allowance. nil → a
	// throttle of the console's own.
	Throttle *throttle.Limiter
	Logger   zerolog.Logger
}

// Console serves the web console. Create it with New and add its routes
// to a mux with Register.
type Console struct {
	opts     Options
	log      zerolog.Logger
	sessions *sessions
	logins   *throttle.Limiter
	activity *activity
	md       *markdown

	// Asset versions are hashed on the first page served, so a ship
	// whose console nobody opens pays nothing for them.
	assetsOnce sync.Once
	assets     map[string]string
}

// New builds the console. It starts counting finished turns at once, for
// the Overview's last hour; Close stops that.
func New(opts Options) (*Console, error) {
	if opts.Door == nil || opts.View == nil {
		return nil, errors.New("console: Options.Door and Options.View are required")
	}
	if opts.Events == nil {
		return nil, errors.New("console: Options.Events is required")
	}
	if opts.MaxMessageChars <= 0 {
		opts.MaxMessageChars = 10_000
	}
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	if opts.Redact == nil {
		opts.Redact = func(s string) string { return s }
	}
	c := &Console{
		opts:     opts,
		log:      opts.Logger.With().Str("component", "console").Logger(),
		sessions: newSessions(time.Now),
		logins:   opts.Throttle,
		md:       newMarkdown(),
	}
	if c.logins == nil {
		c.logins = throttle.New(throttle.Options{})
	}
	c.activity = watchActivity(opts.Door.Subscribe, time.Now)
	return c, nil
}

// Close stops the console's background work.
func (c *Console) Close() { c.activity.close() }

// Register adds the console's routes to mux. Pages sit at the root; the
// console's own endpoints under /console/, so they never shadow /api.
func (c *Console) Register(mux *http.ServeMux) {
	page := func(h http.HandlerFunc) http.Handler { return c.guard(h, false) }
	post := func(h http.HandlerFunc) http.Handler { return c.guard(h, true) }

	mux.Handle("GET /{$}", page(c.handleOverview))
	mux.Handle("GET /chats", page(c.handleChats))
	mux.Handle("GET /chats/{key...}", page(c.handleChat))
	mux.Handle("GET /approvals", page(c.handleApprovals))
	mux.Handle("GET /tasks", page(c.handleTasks))
	mux.Handle("GET /jobs", page(c.handleJobs))
	mux.Handle("GET /tools", page(c.handleTools))
	mux.Handle("GET /notes", page(c.handleNotes))
	mux.Handle("GET /notes/edit", page(c.handleNotesEdit))
	mux.Handle("GET /usage", page(c.handleUsage))

	mux.Handle("GET /console/entries", page(c.handleEntries))
	mux.Handle("GET /console/events", page(c.handleEvents))
	mux.Handle("GET /console/files", page(c.handleFile))
	mux.Handle("POST /console/send", post(c.handleSend))
	mux.Handle("POST /console/approvals/{code}/{verb}", post(c.handleDecide))
	mux.Handle("POST /console/questions/{id}/{n}", post(c.handleAnswer))
	mux.Handle("POST /console/tasks/{name}/run", post(c.handleRunTask))
	mux.Handle("POST /console/jobs/{id}/cancel", post(c.handleCancelJob))
	mux.Handle("POST /console/notes", post(c.handleNotesSave))
	mux.Handle("POST /logout", post(c.handleLogout))

	mux.Handle("GET /login", c.local(http.HandlerFunc(c.handleLoginPage)))
	mux.Handle("POST /login", c.local(http.HandlerFunc(c.handleLogin)))
	mux.Handle("GET /console/static/{file}", c.local(http.HandlerFunc(handleStatic)))
}

// Pages is the console's navigation, in order.
var navigation = []struct{ Path, Title string }{
	{"/", "Overview"}, {"/chats", "Chats"}, {"/approvals", "Approvals"}, {"/tasks", "Tasks"}, {"/jobs", "Jobs"}, {"/notes", "Notes"}, {"/tools", "Tools"},
	{"/usage", "Usage"},
}

// render writes a page: the layout around what body writes. A request
// from htmx (HX-Request) gets only the page's main element, which is what
// its live parts swap in.
func (c *Console) render(w http.ResponseWriter, r *http.Request, title string, body func(*markup)) {
	var m markup
	if r.Header.Get("HX-Request") == "true" {
		body(&m)
	} else {
		c.layout(&m, r, title, body)
	}
	c.write(w, http.StatusOK, &m)
}

// write sends a rendered document.
func (c *Console) write(w http.ResponseWriter, status int, m *markup) {
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(m.b.Bytes())
}

// fail answers an internal error without detail: the log has it.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the browser left
	}
	c.log.Error().Err(err).Str("path", r.URL.Path).Msg("console request failed")
	plain(w, http.StatusInternalServerError, "Something went wrong on ship's side; the log has the details.")
}

// plain answers with a short text message (errors, refusals).
func plain(w http.ResponseWriter, status int, msg string) {
	setPageHeaders(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// setPageHeaders keeps the console's pages to their own scripts and
// styles (a chat message can never run as script, even if escaping
// failed) and out of other sites' frames.
func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
