package fakemcp

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gates hold the calls of the build_wait tool until the test releases them
// or the client cancels, and remember what the server saw of cancellation.
type gates struct {
	mu      sync.Mutex
	open    map[string]chan string // name → the text to answer with
	entered chan string            // names of calls that began waiting
	// cancelled gets the name of a call whose context ended (the SDK
	// cancels the handler's context on notifications/cancelled).
	cancelled chan string
	// noticed gets one value per notifications/cancelled received.
	noticed chan struct{}
	// stop ends every waiting call when the fake closes: a session that
	// closes waits for its calls, and a test's clean-up must not hang on
	// one whose cancellation raced the close.
	stop     chan struct{}
	stopOnce sync.Once
}

func newGates() *gates {
	return &gates{open: map[string]chan string{}, entered: make(chan string, 16), cancelled: make(chan string, 16), noticed: make(chan struct{}, 16), stop: make(chan struct{})}
}

func (g *gates) gate(name string) chan string {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.open[name]
	if !ok {
		c = make(chan string, 1)
		g.open[name] = c
	}
	return c
}

type waitIn struct {
	Name string `json:"name" jsonschema:"which gate to wait at"`
}

// addBlocking adds build_wait {name}: it answers when the test calls
// Release(name), or stops when its call is cancelled. MCP's cancellation
// utility (modelcontextprotocol.io/specification/2025-11-25/basic/utilities/cancellation):
// "Receivers of cancellation notifications SHOULD: stop processing the
// cancelled request … not send a response for the cancelled request"; the
// go-sdk server ends the handler's context when notifications/cancelled
// names its request, and the middleware reports each notification seen.
func (s *Server) addBlocking() {
	g := s.gates
	mcp.AddTool(s.Server, &mcp.Tool{Name: "build_wait", Description: "Wait until the named build is released."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, any, error) {
			gate := g.gate(in.Name)
			g.entered <- in.Name
			select {
			case out := <-gate:
				return text(out), nil, nil
			case <-ctx.Done():
				g.cancelled <- in.Name
				return nil, nil, ctx.Err()
			case <-g.stop:
				return nil, nil, fmt.Errorf("the server is closing")
			}
		})
	s.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				select {
				case g.noticed <- struct{}{}:
				default: // nobody is counting
				}
			}
			return next(ctx, method, req)
		}
	})
}

// Entered gives the name of each build_wait call as it starts waiting.
func (s *Server) Entered() <-chan string { return s.gates.entered }

// Cancelled gives the name of each build_wait call whose context ended
// before it was released: the server saw the call cancelled.
func (s *Server) Cancelled() <-chan string { return s.gates.cancelled }

// CancelNoticed gives a value for each notifications/cancelled received.
func (s *Server) CancelNoticed() <-chan struct{} { return s.gates.noticed }

// Release lets the build_wait call of that name (now or later) answer
// with "built <name>: <detail>".
func (s *Server) Release(name, detail string) {
	s.gates.gate(name) <- fmt.Sprintf("built %s: %s", name, detail)
}

// stopWaiting ends every build_wait call, now and later.
func (g *gates) stopWaiting() { g.stopOnce.Do(func() { close(g.stop) }) }
