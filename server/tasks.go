package server

import (
	"errors"
	"net/http"

	"github.com/shipmyagent/ship/runtime/ingress"
	"github.com/shipmyagent/ship/runtime/tasks"
	"github.com/shipmyagent/ship/server/console"
)

// TaskService is the scheduled tasks as the API and the console show
// them: the scheduler (tasks.Scheduler).
type TaskService = console.TaskService

// handleTasks lists the scheduled tasks (GET /api/tasks).
func (s *Server) handleTasks(w http.ResponseWriter, r *http.Request) {
	if s.opts.Tasks == nil {
		writeJSON(w, r, http.StatusOK, map[string]any{"tasks": []tasks.Status{}})
		return
	}
	list, err := s.opts.Tasks.List(r.Context())
	if err != nil {
		s.taskError(w, r, err)
		return
	}
	if list == nil {
		list = []tasks.Status{}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"tasks": list})
}

// runTaskResponse is the 202 body of POST /api/tasks/{name}/run.
type runTaskResponse struct {
	Status string `json:"status"`
	Name   string `json:"name"`
	// TaskID names the run on the event stream (GET /api/sse/{taskId}).
	TaskID string `json:"taskId"`
}

// handleRunTask queues a run of a task now (POST /api/tasks/{name}/run):
// 202 once queued; its events arrive on the SSE streams.
func (s *Server) handleRunTask(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := tasks.CheckName(name); err != nil {
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, err.Error())
		return
	}
	if s.opts.Tasks == nil {
		writeError(w, r, http.StatusNotFound, codeNotFound, "scheduled tasks are not available on this server")
		return
	}
	id, err := s.opts.Tasks.RunNow(r.Context(), name)
	switch {
	case err == nil:
		writeJSON(w, r, http.StatusAccepted, runTaskResponse{Status: "queued", Name: name, TaskID: id})
	case errors.Is(err, tasks.ErrNotFound):
		writeError(w, r, http.StatusNotFound, codeNotFound, "no task named "+name+" in .ship/tasks")
	case errors.Is(err, tasks.ErrInvalid), errors.Is(err, tasks.ErrUnknownChat):
		// The request is fine; the task cannot run as it stands.
		writeError(w, r, http.StatusConflict, codeConflict, err.Error())
	case ingress.IsBusy(err):
		s.writeAcceptError(w, r, err)
	default:
		s.taskError(w, r, err)
	}
}

// taskError logs an unexpected failure and answers 500.
func (s *Server) taskError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error().Err(err).Str("requestId", requestID(r.Context())).Msg("scheduled tasks")
	writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
}
