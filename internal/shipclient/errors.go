package shipclient

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrUnauthorized matches (errors.Is) an APIError with status 401: the
// server wants a token and the one sent (if any) is wrong.
var ErrUnauthorized = errors.New("unauthorized")

// APIError is an answer of the server that was not a success: a status with
// the {"error":{"code","message"}} body of the HTTP API.
type APIError struct {
	Status  int
	Code    string // e.g. INVALID_INPUT; "" when the body was not the error shape
	Message string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("server answered %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("server answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Is lets errors.Is(err, ErrUnauthorized) find a 401.
func (e *APIError) Is(target error) bool {
	return target == ErrUnauthorized && e.Status == http.StatusUnauthorized
}

// Retryable reports whether the same request may simply be sent again
// later: the server refused it for now (queue full, shutting down) without
// taking it.
func (e *APIError) Retryable() bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests
}

// UnreachableError means the server could not be reached or went away
// mid-answer: connection refused, reset, a stream cut before its final
// event, or a stream that went silent.
type UnreachableError struct {
	// Sent is false when the request certainly never reached the server
	// (the connection could not be made), so sending it again cannot run a
	// turn twice. When true the server may have taken it.
	Sent bool
	Err  error
}

func (e *UnreachableError) Error() string {
	if e.Sent {
		return fmt.Sprintf("lost the connection to the server: %v", e.Err)
	}
	return fmt.Sprintf("cannot reach the server: %v", e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports whether err is (or wraps) an UnreachableError.
func IsUnreachable(err error) bool {
	var u *UnreachableError
	return errors.As(err, &u)
}

// RunError is a run that ended with an error event instead of
// task_completed.
type RunError struct {
	Code    string
	Message string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("the run failed: %s: %s", e.Code, e.Message)
}
