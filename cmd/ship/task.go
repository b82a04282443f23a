package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/internal/shipclient"
	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/tasks"
)

func newTaskCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "List the scheduled tasks, or run one now",
		Long: `Scheduled tasks are files in dir/.ship/tasks/<name>.md: a cron schedule, the chat the results
go to, and the instruction the agent runs at every slot (see docs/extensions.md: Scheduled tasks).`,
	}
	cmd.AddCommand(newTaskListCmd(), newTaskRunCmd())
	return cmd
}

func newTaskListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [dir]",
		Short: "Show every task: schedule, chat, next run, last run and its result",
		Long: `list reads dir/.ship/tasks (ship need not be running). An invalid task file is listed with
what is wrong with it, and the exit status is 1; the other tasks run as listed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(args)
			if err != nil {
				return err
			}
			return listTasks(cmd.OutOrStdout(), dir, time.Now())
		},
	}
}

// projectDir is the folder argument (default: the current folder), which
// must exist.
func projectDir(args []string) (string, error) {
	dir := "."
	if len(args) == 1 {
		dir = args[len(args)-1]
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("project folder %s does not exist", dir)
	}
	return dir, nil
}

// listTasks prints the task table of the project in dir.
func listTasks(w io.Writer, dir string, now time.Time) error {
	folder := filepath.Join(dir, config.StateDir, "tasks")
	list, err := tasks.List(folder, now, time.Local)
	if err != nil {
		return fmt.Errorf("listing tasks: %w", err)
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "No scheduled tasks in %s (a task is a file <name>.md there; see docs/extensions.md: Scheduled tasks).\n", folder)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tCHAT\tENABLED\tNEXT RUN\tLAST RUN\tLAST RESULT")
	invalid := 0
	for _, s := range list {
		enabled := "yes"
		switch {
		case s.Error != "":
			enabled, invalid = "invalid", invalid+1
		case !s.Enabled:
			enabled = "no"
		}
		result := s.LastResult
		if s.LastStatus != "" {
			result = s.LastStatus + ": " + result
		}
		if s.Warning != "" && s.Error == "" {
			enabled += " (never runs)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termSafe(s.Name), dash(termSafe(s.Cron)), dash(termSafe(s.Timezone)),
			dash(termSafe(s.ChatKey)), enabled, when(s.NextRun), when(s.LastRun), dash(termSafe(result)))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the task list: %w", err)
	}
	for _, s := range list {
		switch {
		case s.Error != "":
			fmt.Fprintf(w, "\n%s.md is invalid and does not run: %s\n", termSafe(s.Name), termSafe(s.Error))
		case s.Warning != "":
			fmt.Fprintf(w, "\nwarning: %s.md (cron \"%s\"): %s\n", termSafe(s.Name), termSafe(s.Cron), termSafe(s.Warning))
		}
	}
	if cfg, err := config.Load(dir, nil); err == nil && cfg.Cluster.On() {
		// The runs are records the replicas share in NATS, which this
		// command does not reach.
		fmt.Fprintln(w, "\nThis project runs as a cluster: the last runs are in the replicas' shared records, "+
			"not shown here; GET /api/tasks on any replica lists them.")
	}
	if invalid > 0 {
		return fmt.Errorf("%d task file(s) invalid: fix them (the other tasks run as listed)", invalid)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// when shows a time in its own zone (the task's), to the minute.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04 MST")
}

type taskRunFlags struct{ url, token string }

func newTaskRunCmd() *cobra.Command {
	var f taskRunFlags
	cmd := &cobra.Command{
		Use:   "run <name> [dir]",
		Short: "Run a task now, through the ship running for the project",
		Long: `run asks the ship running for the project in dir (default: the current folder) to run the task
now, outside its schedule (POST /api/tasks/<name>/run). It finds that ship where ship start
listens: server.host and server.port of dir/ship.json, SHIP_HOST and SHIP_PORT, and sends
server.token or SHIP_API_TOKEN. Its replies go to the task's chat.`,
		Example: `  ship task run daily-report
  ship task run daily-report mybot --url http://127.0.0.1:8080`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(args[1:])
			if err != nil {
				return err
			}
			return runTask(cmd.Context(), cmd.OutOrStdout(), dir, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "the running ship's address (default: from ship.json and the environment, as ship start listens)")
	fl.StringVar(&f.token, "token", "", "API token (default: server.token or SHIP_API_TOKEN)")
	return cmd
}

// runTask asks the running ship to run task name now.
func runTask(ctx context.Context, w io.Writer, dir, name string, f taskRunFlags) error {
	if err := tasks.CheckName(name); err != nil {
		return err
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		return err
	}
	base := f.url
	if base == "" {
		base = "http://" + net.JoinHostPort(dialHost(cfg.Server.Host), strconv.Itoa(cfg.Server.Port))
	}
	base = strings.TrimRight(base, "/")
	token := firstNonEmpty(f.token, cfg.Server.Token)

	client, err := shipclient.New(shipclient.Options{BaseURL: base, Token: token})
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	id, err := client.RunTask(ctx, name)
	var apiErr *shipclient.APIError
	switch {
	case shipclient.IsUnreachable(err):
		return fmt.Errorf("ship is not running for %s (nothing answers at %s): start it with `ship start %s`; tasks run inside a running ship", dir, base, dir)
	case errors.Is(err, shipclient.ErrUnauthorized):
		return fmt.Errorf("%s rejected the API token: pass the right one with --token or SHIP_API_TOKEN", base)
	case errors.As(err, &apiErr) && apiErr.Retryable():
		return fmt.Errorf("ship at %s cannot take the run now (%s); try again shortly", base, apiErr.Message)
	case errors.As(err, &apiErr):
		return errors.New(apiErr.Message)
	case err != nil:
		return err
	}
	// The follow-up command must work when pasted: the stream needs the
	// token too, named by its variable so the secret is never printed.
	auth := ""
	if token != "" {
		auth = `-H "Authorization: Bearer $SHIP_API_TOKEN" `
	}
	fmt.Fprintf(w, "Task %s queued (run %s); its replies go to the task's chat.\nFollow it: curl -N %s%s/api/sse/%s\n",
		name, termSafe(id), auth, base, url.PathEscape(id))
	return nil
}

// dialHost is where to reach a server listening on host: a wildcard
// address is reached on loopback.
func dialHost(host string) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	return host
}
