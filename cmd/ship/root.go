package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// run executes the command line and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "ship: %v\n", err)
		return 1
	}
	return 0
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "ship",
		Short: "ship puts an LLM agent behind Telegram, Feishu/Lark, QQ and an HTTP API",
		Long: `ship runs one agent for your team or community, answering where people already talk:
Telegram (private chats, groups, forum topics), Feishu/Lark chats, QQ (guild channels,
groups, C2C) and an HTTP API. Every message is logged to .ship/chats before it is answered.

Get started:
  ship init mybot            # write Agent.md and ship.json
  ship start mybot --offline # run with the built-in offline model
  ship doctor mybot          # check the settings and every service they name`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newInitCmd(), newStartCmd(), newChatCmd(), newVersionCmd())
	root.AddCommand(newTaskCmd(), newExportCmd(), newUsageCmd(), newDoctorCmd())
	return root
}
