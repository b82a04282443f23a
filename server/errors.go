package server

import (
	"encoding/json"
	"net/http"

	"github.com/rs/zerolog"
)

// Error codes of the {"error":{"code","message"}} body (see docs/api.md). Clients
// branch on the code, so these strings are a contract.
const (
	codeInvalidInput     = "INVALID_INPUT"
	codeUnauthorized     = "UNAUTHORIZED"
	codeRateLimited      = "RATE_LIMITED"
	codeNotFound         = "NOT_FOUND"
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	codePayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	codeConflict         = "CONFLICT"
	codeQueueFull        = "QUEUE_FULL"
	codeShuttingDown     = "SHUTTING_DOWN"
	codeInternal         = "INTERNAL"
)

// Error codes of refusals that are about where a request comes from and how
// many streams it holds, not about its content.
const (
	// codeForbidden: a request from a web page on another origin, or one
	// from off loopback while no token is set.
	codeForbidden = "FORBIDDEN"
	// codeUnsupportedMediaType: a state-changing request that is not
	// Content-Type: application/json.
	codeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// codeTooManyStreams: the client, or the server as a whole, has as
	// many event streams open as it may.
	codeTooManyStreams = "TOO_MANY_STREAMS"
)

// msgInternal is all a client learns about an unexpected failure: the real
// error goes to the log, where it cannot leak paths or secrets.
const msgInternal = "internal error; see the server log for the request id"

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeError sends the uniform error body with status.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeJSON(w, r, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// writeJSON sends v as the JSON body with status. An encoding failure can
// only be a write to a gone client at this point, so it is logged, not
// answered.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	// Answers describe one run or the live state: no cache may replay them.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // bodies are JSON for API clients, never inlined in HTML
	if err := enc.Encode(v); err != nil {
		zerolog.Ctx(r.Context()).Debug().Err(err).Msg("writing response body")
	}
}
