package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/tools"
)

func taskTool(ts []agent.Tool, name string) agent.Tool {
	for _, t := range ts {
		if t.Definition().Name == name {
			return t
		}
	}
	return nil
}

func TestTaskCreateTargetsTheCurrentChatOrTheOneNamed(t *testing.T) {
	now := time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC)
	ts := tools.Tasks(tools.TaskToolsOptions{Dir: filepath.Join(t.TempDir(), "tasks"), Local: time.UTC, Now: func() time.Time { return now }})
	create, list := taskTool(ts, tools.TaskCreateName), taskTool(ts, tools.TaskListName)

	// Outside a chat there is no default.
	res := create.Call(context.Background(), json.RawMessage(`{"name":"a","cron":"0 9 * * *","instruction":"x"}`))
	if res.OK || !strings.Contains(res.Content, "chatKey is required") {
		t.Errorf("without a chat: %s", res.Content)
	}
	ctx := dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "feishu", ChatKey: "feishu:chat:oc_1"})
	res = create.Call(ctx, json.RawMessage(`{"name":"a","cron":"0 9 * * *","instruction":"x"}`))
	if !res.OK || !strings.Contains(res.Content, `"chatKey":"feishu:chat:oc_1"`) || !strings.Contains(res.Content, `"nextRun":"2026-03-04T09:00:00Z"`) ||
		!strings.Contains(res.Content, "scheduler:a") {
		t.Errorf("in a chat: %s", res.Content)
	}
	res = create.Call(ctx, json.RawMessage(`{"name":"b","cron":"30 7 * * *","timezone":"Asia/Shanghai","chatKey":"api:chat:ops","instruction":"y"}`))
	if !res.OK || !strings.Contains(res.Content, `"chatKey":"api:chat:ops"`) || !strings.Contains(res.Content, `"nextRun":"2026-03-05T07:30:00+08:00"`) {
		t.Errorf("another chat: %s", res.Content)
	}
	res = list.Call(ctx, nil)
	if !res.OK || strings.Count(res.Content, `"name"`) != 2 {
		t.Errorf("task_list: %s", res.Content)
	}
	for _, bad := range []string{`{"name":"c","cron":"0 9 * * *","timezone":"Nowhere/Town","instruction":"x"}`, `[1]`, `{"name":"c"} {}`} {
		if res := create.Call(ctx, json.RawMessage(bad)); res.OK {
			t.Errorf("%s accepted: %s", bad, res.Content)
		}
	}
}

// In cluster mode the runs are in the replicas' shared records, not in the
// folder's state.json: task_list shows the last run whichever replica ran
// it.
func TestTaskListShowsTheRunsTheReplicasShare(t *testing.T) {
	now := time.Date(2026, 3, 4, 8, 0, 0, 0, time.UTC)
	shared := records.NewMemory()
	ts := tools.Tasks(tools.TaskToolsOptions{Dir: filepath.Join(t.TempDir(), "tasks"), Local: time.UTC,
		Now: func() time.Time { return now }, Records: shared})
	create, list := taskTool(ts, tools.TaskCreateName), taskTool(ts, tools.TaskListName)
	ctx := dispatch.WithRequest(context.Background(), dispatch.RequestContext{Channel: "api", ChatKey: "api:chat:ops"})
	if res := create.Call(ctx, json.RawMessage(`{"name":"daily","cron":"0 9 * * *","instruction":"x"}`)); !res.OK {
		t.Fatal(res.Content)
	}
	// What another replica's scheduler wrote.
	rec := `{"v":1,"lastSlot":"2026-03-03T09:00:00Z","lastRun":"2026-03-03T09:00:01Z","lastRunId":"r-1","lastStatus":"ok","lastResult":"sent"}`
	if _, err := shared.Put(ctx, "daily", []byte(rec), 0); err != nil {
		t.Fatal(err)
	}
	res := list.Call(ctx, nil)
	if !res.OK || !strings.Contains(res.Content, `"lastRunId":"r-1"`) || !strings.Contains(res.Content, `"lastStatus":"ok"`) {
		t.Errorf("task_list in cluster mode: %s", res.Content)
	}
}
