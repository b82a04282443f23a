package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/shipmyagent/ship/runtime/config"
	"github.com/shipmyagent/ship/runtime/usage"
)

// usageDir holds the token counters under .ship, one file a day.
const usageDir = "usage"

type usageFlags struct {
	day    string
	top    int
	asJSON bool
}

func newUsageCmd() *cobra.Command {
	var f usageFlags
	cmd := &cobra.Command{
		Use:   "usage [dir]",
		Short: "Show the tokens used today (or on --day), in all and by chat and person",
		Long: `usage reads dir/.ship/usage/<day>.json, the counters a running ship rewrites after every
turn, so it works whether ship runs or not. Days are UTC days; the budgets of limits.tokens reset
at 00:00 UTC. Input counts every prompt token, cached ones included; a budget counts input plus
output. The last 31 days are kept.`,
		Example: `  ship usage mybot
  ship usage mybot --day 2026-11-25 --top 20
  ship usage mybot --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := projectDir(args)
			if err != nil {
				return err
			}
			return runUsage(cmd.OutOrStdout(), dir, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.day, "day", "", "the UTC day to show, YYYY-MM-DD (default: today)")
	fl.IntVar(&f.top, "top", 10, "how many chats and people to list")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON (the shape of /api/status's usage)")
	return cmd
}

func runUsage(w io.Writer, dir string, f usageFlags) error {
	if f.top < 0 {
		return fmt.Errorf("--top %d: want 0 or more", f.top)
	}
	r, err := usage.ReadReport(filepath.Join(dir, config.StateDir, usageDir), f.day, time.Now(), f.top)
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		return nil
	}
	return printUsage(w, r)
}

// printUsage writes the report as tables a person reads.
func printUsage(w io.Writer, r usage.Report) error {
	fmt.Fprintf(w, "Tokens on %s (UTC; budgets reset at %s)\n\n", r.Day, r.ResetsAt)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, c usage.Counts) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, c.Turns, c.Input, c.CachedInput, c.Output, c.Total())
	}
	head := func(what string) { fmt.Fprintf(tw, "%s\tTURNS\tINPUT\tCACHED\tOUTPUT\tTOTAL\t\n", what) }
	head("")
	row("all", r.Total)
	if len(r.Chats) > 0 {
		fmt.Fprintln(tw, "\t\t\t\t\t\t")
		head(fmt.Sprintf("CHAT (top %d of %d)", len(r.Chats), r.ChatCount))
		for _, c := range r.Chats {
			row(c.Key, c.Counts)
		}
	}
	if len(r.People) > 0 {
		fmt.Fprintln(tw, "\t\t\t\t\t\t")
		head(fmt.Sprintf("PERSON (top %d of %d)", len(r.People), r.PeopleCount))
		for _, p := range r.People {
			row(p.Key, p.Counts)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}
