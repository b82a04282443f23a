package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/records"
	"github.com/shipmyagent/ship/runtime/tasks"
)

// Names of the task tools. They act (a task posts on its own later), so the
// tool policy denies them until a rule allows them.
const (
	TaskCreateName = "task_create"
	TaskListName   = "task_list"
	TaskDeleteName = "task_delete"
)

// TaskToolsOptions configure the task tools.
type TaskToolsOptions struct {
	// Dir is the task folder (<project>/.ship/tasks).
	Dir string
	// Local is the zone of tasks that name none; nil is time.Local.
	Local *time.Location
	// Now is the clock of next-run times; nil is time.Now.
	Now func() time.Time
	// Records, in cluster mode, holds the tasks' slots and runs (the
	// scheduler's shared records) instead of the folder's state.json.
	Records records.Table
}

// Tasks returns task_create, task_list and task_delete.
func Tasks(opts TaskToolsOptions) []agent.Tool {
	if opts.Local == nil {
		opts.Local = time.Local
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return []agent.Tool{&TaskCreate{opts: opts}, &TaskList{opts: opts}, &TaskDelete{opts: opts}}
}

// TaskCreate is task_create: it writes a new task file.
type TaskCreate struct{ opts TaskToolsOptions }

// Definition describes task_create to the model.
func (t *TaskCreate) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name: TaskCreateName,
		Description: "Schedule a recurring task: at every slot of the cron schedule the instruction is run as a message in the chat, " +
			"and the replies go to that chat. Runs once per slot; a slot missed while ship was down runs once at start.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"name":        map[string]any{"type": "string", "description": "1 to 64 characters of a-z 0-9 _ -, e.g. daily-report."},
				"cron":        map[string]any{"type": "string", "description": "Five cron fields: minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\" (09:00 Monday to Friday)."},
				"timezone":    map[string]any{"type": "string", "description": "IANA time zone, e.g. Europe/Berlin; default: the server's."},
				"chatKey":     map[string]any{"type": "string", "description": "The chat the results go to; default: this chat."},
				"instruction": map[string]any{"type": "string", "description": "What to do at each run, as you would be asked in a message."},
			},
			"required": []string{"name", "cron", "instruction"},
		},
	}
}

// Call validates the task and writes its file.
func (t *TaskCreate) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Name        string `json:"name"`
		Cron        string `json:"cron"`
		Timezone    string `json:"timezone"`
		ChatKey     string `json:"chatKey"`
		Instruction string `json:"instruction"`
	}
	if msg := decodeArgs(args, &in); msg != "" {
		return failure(msg)
	}
	task := tasks.Task{
		Name: strings.TrimSpace(in.Name), Cron: strings.TrimSpace(in.Cron), Timezone: strings.TrimSpace(in.Timezone),
		ChatKey: strings.TrimSpace(in.ChatKey), Enabled: true, Instruction: strings.TrimSpace(in.Instruction),
	}
	if task.ChatKey == "" {
		req, _ := dispatch.RequestFromContext(ctx)
		task.ChatKey = req.ChatKey
	}
	if err := (tasks.Folder{Dir: t.opts.Dir}).Create(task); err != nil {
		return failure(taskError(err))
	}
	st := describe(task, t.opts)
	return result(true, map[string]any{"task": st,
		"note": "The task's runs act as " + tasks.IdentityPrefix + task.Name + " in the tool policy."})
}

// TaskList is task_list.
type TaskList struct{ opts TaskToolsOptions }

// Definition describes task_list to the model.
func (t *TaskList) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name:        TaskListName,
		Description: "List the scheduled tasks: schedule, target chat, next run, last run and its result, and why a task file is invalid.",
		Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
	}
}

// Call lists the tasks.
func (t *TaskList) Call(ctx context.Context, args json.RawMessage) agent.ToolResult {
	var in struct{}
	if msg := decodeArgs(args, &in); msg != "" {
		return failure(msg)
	}
	var list []tasks.Status
	var err error
	if t.opts.Records != nil {
		list, err = tasks.ListShared(ctx, t.opts.Dir, t.opts.Records, t.opts.Now(), t.opts.Local)
	} else {
		list, err = tasks.List(t.opts.Dir, t.opts.Now(), t.opts.Local)
	}
	if err != nil {
		return failure("reading the tasks failed: " + err.Error())
	}
	return result(true, map[string]any{"tasks": list})
}

// TaskDelete is task_delete.
type TaskDelete struct{ opts TaskToolsOptions }

// Definition describes task_delete to the model.
func (t *TaskDelete) Definition() llms.FunctionDefinition {
	return llms.FunctionDefinition{
		Name:        TaskDeleteName,
		Description: "Delete a scheduled task by name; it does not run again.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string", "description": "The task's name."}},
			"required":   []string{"name"},
		},
	}
}

// Call deletes the task's file.
func (t *TaskDelete) Call(_ context.Context, args json.RawMessage) agent.ToolResult {
	var in struct {
		Name string `json:"name"`
	}
	if msg := decodeArgs(args, &in); msg != "" {
		return failure(msg)
	}
	name := strings.TrimSpace(in.Name)
	if err := (tasks.Folder{Dir: t.opts.Dir}).Delete(name); err != nil {
		return failure(taskError(err))
	}
	return result(true, map[string]any{"deleted": name})
}

// decodeArgs decodes a tool's arguments strictly: an unknown field is
// named, so the model can correct itself.
func decodeArgs(args json.RawMessage, v any) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return "arguments are not valid: " + err.Error()
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "arguments are not valid: data after the object"
	}
	return ""
}

// taskError words a task error for the model.
func taskError(err error) string {
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		return err.Error() + " (task_list shows the tasks)"
	case errors.Is(err, tasks.ErrInvalid), errors.Is(err, tasks.ErrExists):
		return err.Error()
	}
	return "writing the task failed: " + err.Error()
}

// describe is the task as task_create reports it.
func describe(task tasks.Task, opts TaskToolsOptions) map[string]any {
	out := map[string]any{"name": task.Name, "cron": task.Cron, "chatKey": task.ChatKey, "timezone": task.Timezone}
	if task.Timezone == "" {
		out["timezone"] = opts.Local.String()
	}
	if sched, err := task.Schedule(opts.Local); err == nil {
		if next := sched.Next(opts.Now()); !next.IsZero() {
			out["nextRun"] = next.Format(time.RFC3339)
		} else {
			out["nextRun"] = fmt.Sprintf("never (no slot of %q in the next five years)", task.Cron)
		}
	}
	return out
}
