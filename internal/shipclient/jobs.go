package shipclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"
)

// Event types of background jobs, on GET /api/sse.
const (
	TypeJobStarted  = "job_started"
	TypeJobFinished = "job_finished"
)

// Job states as job_finished reports them.
const (
	JobDone        = "done"
	JobFailed      = "failed"
	JobCancelled   = "cancelled"
	JobInterrupted = "interrupted"
)

// JobEvent is a background job starting or ending in a chat.
type JobEvent struct {
	// ID is the SSE frame id, to resume after with WatchJobs.
	ID      string `json:"-"`
	Type    string `json:"type"`
	ChatKey string `json:"chatKey,omitempty"`
	JobID   string `json:"jobId"`
	Tool    string `json:"tool"`
	// Label shows the call: "exec_shell `make test`". It is the server's
	// text, which a model chose: sanitize it before a terminal shows it.
	Label string `json:"label"`
	State string `json:"state"`
	// ExitCode (nil before the end; -1 when there was none) and
	// DurationMs are set on job_finished.
	ExitCode    *int   `json:"exitCode,omitempty"`
	DurationMs  int64  `json:"durationMs,omitempty"`
	CancelledBy string `json:"cancelledBy,omitempty"`
}

// Duration is how long the job ran, on job_finished.
func (e JobEvent) Duration() time.Duration { return time.Duration(e.DurationMs) * time.Millisecond }

// WatchJobs reads the event stream of one chat (GET /api/sse/{chatKey})
// and calls onJob for each job event, until ctx ends or the stream does.
// With lastID it resumes after that frame (Last-Event-ID), so a job event
// sent while reconnecting is neither lost nor repeated. It returns the id
// of the last frame read, to resume from, and why the stream ended: the
// errors of the other calls (an *UnreachableError for a lost connection,
// ErrUnauthorized for a token the server refuses), or ctx.Err(). opened
// (may be nil) is called once the stream is open.
func (c *Client) WatchJobs(ctx context.Context, chatKey, lastID string, opened func(), onJob func(JobEvent)) (string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	h := http.Header{"Accept": {"text/event-stream"}}
	if lastID != "" {
		h.Set("Last-Event-ID", lastID)
	}
	resp, err := c.do(ctx, http.MethodGet, c.endpoint("/api/sse/"+url.PathEscape(chatKey), ""), nil, h)
	if err != nil {
		return lastID, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return lastID, readAPIError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return lastID, fmt.Errorf("GET /api/sse answered %q, not an event stream", mt)
	}
	if opened != nil {
		opened()
	}
	// Keep-alive comments come every 30 s; silence for c.idle means the
	// connection is gone without a word.
	sse, stop := c.watchedSSE(resp.Body, cancel)
	defer stop()
	for {
		f, err := sse.Next()
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errStreamIdle) {
				err = cause
			} else if ctx.Err() != nil {
				return lastID, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("the server ended the event stream")
			}
			return lastID, &UnreachableError{Sent: true, Err: err}
		}
		if f.ID != "" {
			lastID = f.ID
		}
		var ev JobEvent
		if json.Unmarshal([]byte(f.Data), &ev) != nil || (ev.Type != TypeJobStarted && ev.Type != TypeJobFinished) {
			continue // a run's events, or one this client does not know
		}
		if ev.ChatKey != "" && ev.ChatKey != chatKey {
			continue
		}
		ev.ID = f.ID
		onJob(ev)
	}
}
