// Package fakemcp is a small MCP server built with the official Go SDK, for
// tests of ship's MCP client: both ends speak the real protocol.
//
// Its tools: echo {text}, add {a, b}, slow {ms} (sleeps, honouring
// cancellation), crash (ends the server mid-call: the stdio binary exits),
// image (an image content), resources (a resource link and an embedded
// resource), fail {message} (an isError result), getenv {name} and cwd
// (what a stdio child sees), add_tool {name} (adds an echo-like tool at run
// time, which makes the SDK send notifications/tools/list_changed), and
// build_wait {name} (waits until Release(name) or its cancellation, which
// it records: block.go), and ping (input schema {"type":"object"} exactly, with no "properties", as
// MCP allows for a tool without arguments; it answers "pong").
//
// It comes in two forms: StartHTTP serves streamable HTTP in process (an
// httptest server), and the binary in cmd/fakemcp serves stdio.
//
// The package does not import "testing".
package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a fake server.
type Options struct {
	// Crash is what the crash tool does before it answers; nil answers with
	// an error. The stdio binary exits the process.
	Crash func()
}

// Server is the fake: the SDK's server with the fake's tools.
type Server struct {
	*mcp.Server
	opts  Options
	gates *gates
}

// PNG is the image the image tool returns: a 1×1 transparent PNG.
var PNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

// EchoIn is echo's input; its schema (with the description) is what a
// client should pass through to the model.
type EchoIn struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"how long to take, in milliseconds"`
}

type nameIn struct {
	Name string `json:"name"`
}

type failIn struct {
	Message string `json:"message"`
}

type none struct{}

// New returns the fake server with its tools.
func New(opts Options) *Server {
	s := &Server{Server: mcp.NewServer(&mcp.Implementation{Name: "fakemcp", Version: "1.0.0"}, nil), opts: opts, gates: newGates()}
	s.addBlocking()
	mcp.AddTool(s.Server, &mcp.Tool{Name: "echo", Description: "Echo the text back."}, echo)
	mcp.AddTool(s.Server, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(in.A + in.B)), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "slow", Description: "Answer after ms milliseconds."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-t.C:
				return text(fmt.Sprintf("slept %d ms", in.MS)), nil, nil
			}
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "crash", Description: "End the server in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			if s.opts.Crash != nil {
				s.opts.Crash()
			}
			return nil, nil, fmt.Errorf("crashed")
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "image", Description: "Return a tiny PNG."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a pixel:"},
				&mcp.ImageContent{Data: PNG, MIMEType: "image/png"},
			}}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "resources", Description: "Return a resource link and an embedded resource."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			size := int64(1234)
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ResourceLink{URI: "file:///srv/report.pdf", Name: "report", MIMEType: "application/pdf", Size: &size},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///srv/notes.txt", MIMEType: "text/plain", Text: "secret notes"}},
			}}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "fail", Description: "Fail with the message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "getenv", Description: "The value of an environment variable, or (unset)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				v = "(unset)"
			}
			return text(v), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "cwd", Description: "The working folder."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			wd, err := os.Getwd()
			if err != nil {
				return nil, nil, err
			}
			return text(wd), nil, nil
		})
	mcp.AddTool(s.Server, &mcp.Tool{Name: "add_tool", Description: "Add an echo tool of that name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, any, error) {
			s.AddEcho(in.Name)
			return text("added " + in.Name), nil, nil
		})
	// The typed tools without arguments (crash, cwd, …) get the SDK's
	// {"type":"object","additionalProperties":false}; ping is given the
	// schema the SDK's documentation advises for a tool that takes no
	// input, sent as written.
	s.Server.AddTool(&mcp.Tool{Name: "ping", Description: "Answer pong.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("pong"), nil
		})
	return s
}

// AddEcho adds a tool that echoes like echo under another name; the SDK
// tells connected clients with notifications/tools/list_changed.
func (s *Server) AddEcho(name string) {
	mcp.AddTool(s.Server, &mcp.Tool{Name: name, Description: "Echo the text back (added at run time)."}, echo)
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in EchoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Text), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
