package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/shipmyagent/ship/runtime/statefile"
)

// StateFile is the scheduler's bookkeeping in the task folder.
const StateFile = "state.json"

// stateVersion is the format of state.json.
const stateVersion = 1

// Outcomes of a task's latest run (TaskState.LastStatus).
const (
	StatusStarted     = "started"     // taken and queued; not ended yet
	StatusOK          = "ok"          // ran; a reply reached the chat, or there was nothing to say
	StatusFailed      = "failed"      // ran and failed, or its reply did not reach the chat
	StatusSkipped     = "skipped"     // the slot was taken but not run (unknown chat, queue full)
	StatusInterrupted = "interrupted" // ship stopped during the run; the journal resumes it
)

// TaskState is the bookkeeping of one task.
type TaskState struct {
	// LastSlot is the latest schedule slot taken. It is written before
	// the run is queued, so no slot at or before it ever runs again.
	LastSlot   time.Time `json:"lastSlot,omitzero"`
	LastRun    time.Time `json:"lastRun,omitzero"`
	LastRunID  string    `json:"lastRunId,omitempty"`
	LastStatus string    `json:"lastStatus,omitempty"`
	LastResult string    `json:"lastResult,omitempty"`
	// LastEnded is when the latest run ended (zero while it has not).
	LastEnded time.Time `json:"lastEnded,omitzero"`
}

// state is state.json.
type state struct {
	V     int                  `json:"v"`
	Tasks map[string]TaskState `json:"tasks"`
}

func newState() state { return state{V: stateVersion, Tasks: map[string]TaskState{}} }

// errCorruptState marks a state.json that does not parse.
var errCorruptState = errors.New("the scheduler's state file is damaged")

// readState reads state.json; a missing file is an empty state.
func readState(path string) (state, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return newState(), fmt.Errorf("reading %s: %w", path, err)
	}
	st := newState()
	if err := json.Unmarshal(data, &st); err != nil {
		return newState(), fmt.Errorf("reading %s: %w: %w", path, errCorruptState, err)
	}
	if st.Tasks == nil {
		st.Tasks = map[string]TaskState{}
	}
	return st, nil
}

// writeState replaces state.json atomically and durably: the slot it
// records must outlive a power cut that the queued run survives.
func writeState(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding task state: %w", err)
	}
	if err := statefile.Write(path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing task state: %w", err)
	}
	return nil
}
