package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/internal/fakeopenai"
	"github.com/shipmyagent/ship/runtime/agent"
)

// looseTool is a tool whose parameters schema the OpenAI API refuses.
type looseTool struct {
	name   string
	params any
}

func (t looseTool) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{Name: t.name, Description: "A tool.", Parameters: t.params}
}

func (t looseTool) Call(context.Context, json.RawMessage) agent.ToolResult {
	return agent.ToolResult{Content: t.name + " ran", OK: true}
}

type toolbox []agent.Tool

func (b toolbox) Tools() []agent.Tool { return b }

// Every tool, ship's own and a toolbox's, reaches the model with a schema
// the API takes: the fake refuses the request otherwise, as OpenAI does.
func TestToolSchemasAreFittedForTheModel(t *testing.T) {
	fake, model := openAIModel(t)
	fake.SetHandler(func(r fakeopenai.Request) fakeopenai.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return fakeopenai.Response{Content: "done: " + res[0].Content}
		}
		return fakeopenai.Response{ToolCalls: []fakeopenai.ToolCall{{Name: "boxed"}}}
	})
	rt, err := agent.New(agent.Options{Model: model, RetryBackoff: time.Millisecond,
		Tools:     []agent.Tool{looseTool{"own", map[string]any{"type": "object", "required": []string{"gone"}}}},
		Toolboxes: []agent.Toolbox{toolbox{looseTool{"boxed", json.RawMessage(`{"type":"object"}`)}}},
		Logger:    zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Run(context.Background(), agent.AgentRunInput{ChatKey: "api:chat:1", Instructions: "go"})
	if err != nil || !res.Success || res.Output != "done: boxed ran" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	for _, tl := range fake.Requests()[0].Tools {
		if string(tl.Parameters) != `{"properties":{},"type":"object"}` {
			t.Errorf("%s offered with %s", tl.Name, tl.Parameters)
		}
	}
}
