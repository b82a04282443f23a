// Command ship runs an LLM agent behind Telegram, Feishu/Lark, QQ and an
// HTTP API. See `ship --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = "0.1.0-dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
