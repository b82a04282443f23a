// Command fakemcp serves the fake MCP server (package fakemcp) over stdio,
// for tests of stdio MCP clients. Its crash tool exits the process in the
// middle of the call. With -fail it writes the message to stderr and exits
// 1 at once (a server that cannot start); -stderr writes a line to stderr
// before serving.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/shipmyagent/ship/internal/fakemcp"
)

func main() {
	fail := flag.String("fail", "", "write this to stderr and exit 1 at once")
	stderr := flag.String("stderr", "", "write this line to stderr before serving")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(1)
	}
	if *stderr != "" {
		fmt.Fprintln(os.Stderr, *stderr)
	}
	s := fakemcp.New(fakemcp.Options{Crash: func() {
		fmt.Fprintln(os.Stderr, "fakemcp: crashing as asked")
		os.Exit(3)
	}})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fakemcp:", err)
		os.Exit(1)
	}
}
