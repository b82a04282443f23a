// Command ship runs an LLM agent behind Telegram, Feishu/Lark, QQ and an
// HTTP API. See `ship --help`.
package main

import (
	"context"
	"os"

	"github.com/shipmyagent/ship/tools"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "0.1.0-dev"

func main() {
	// ship started as a command's watchdog (exec_shell), not as ship.
	if len(os.Args) == 3 && os.Args[1] == tools.WatchdogArg {
		os.Exit(tools.Watch(os.Stdin, os.Args[2]))
	}
	// The first SIGINT/SIGTERM ends ctx; `ship start` drains on it, and a
	// second one stops at once (drain.go).
	ctx, stop := stopSignals(context.Background())
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
