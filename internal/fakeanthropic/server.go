package fakeanthropic

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

const (
	messagesPath = "/v1/messages"
	maxBodyBytes = 32 << 20
	// DefaultMaxOutputTokens is the largest max_tokens accepted unless
	// Options say otherwise (Claude Sonnet 4.5's limit).
	DefaultMaxOutputTokens = 64000
)

// Options configures StartWithOptions.
type Options struct {
	// APIKey, when set, makes every request whose x-api-key header differs
	// fail with 401. Without it any non-empty key is accepted; a missing
	// header always fails, as in the real API.
	APIKey string
	// MaxOutputTokens is the model's output limit: a larger max_tokens is
	// rejected with the real API's error. 0 means DefaultMaxOutputTokens.
	MaxOutputTokens int
	// MaxRecorded, when positive, keeps only the most recent MaxRecorded
	// requests for Requests. RequestCount still counts every request.
	MaxRecorded int
	// Now is the prompt cache's clock (time.Now when nil): a test moves
	// it to see a cached prefix expire.
	Now func() time.Time
	// Models are the ids GET /v1/models lists (default claude-sonnet-4-5
	// and claude-haiku-4-5); messages accept any model either way.
	Models []string
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	opts    Options
	srv     *fakehttp.Server
	log     fakehttp.Log[Request]
	handler atomic.Pointer[Handler]
	cache   promptCache

	reqIDs   atomic.Int64 // numbers req_fake<n>
	messages atomic.Int64 // numbers msg_fake<n>
	toolUses atomic.Int64 // numbers toolu_fake<n>
	// modelLists counts GET /v1/models answered.
	modelLists atomic.Int64
}

// Start starts a fake on 127.0.0.1 on a free port, answering with h
// (EchoChatSend when h is nil).
func Start(h Handler) (*Server, error) {
	return StartWithOptions(h, Options{})
}

// StartWithOptions is Start with options.
func StartWithOptions(h Handler, opts Options) (*Server, error) {
	if opts.MaxOutputTokens <= 0 {
		opts.MaxOutputTokens = DefaultMaxOutputTokens
	}
	s := &Server{opts: opts, log: fakehttp.Log[Request]{Max: opts.MaxRecorded, Clone: Request.clone}}
	s.cache.now = opts.Now
	if s.cache.now == nil {
		s.cache.now = time.Now
	}
	s.SetHandler(h)
	if _, err := fakehttp.Start("fakeanthropic", func(srv *fakehttp.Server) http.Handler {
		s.srv = srv
		return http.HandlerFunc(s.serveHTTP)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// URL returns the server root, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.srv.URL() }

// BaseURL returns "http://127.0.0.1:PORT/v1", the value for
// anthropic.WithBaseURL (the client appends /messages).
func (s *Server) BaseURL() string { return s.URL() + "/v1" }

// SetHandler replaces the scripted model; nil means EchoChatSend. Requests
// already being answered keep the handler they started with.
func (s *Server) SetHandler(h Handler) {
	if h == nil {
		h = EchoChatSend
	}
	s.handler.Store(&h)
}

// Requests returns copies of the recorded requests in arrival order. Every
// authenticated request whose body was valid JSON is recorded, including
// ones then rejected for breaking the API's rules.
func (s *Server) Requests() []Request { return s.log.All() }

// RequestCount returns how many requests have been recorded.
func (s *Server) RequestCount() int { return s.log.Count() }

// Close stops accepting connections, waits for the requests being answered
// to finish (requests that arrive on an open connection meanwhile get 503),
// then closes every connection. It is safe to call more than once.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serveHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Request-Id", fmt.Sprintf("req_fake%d", s.reqIDs.Add(1)))
	if s.srv.Closing() {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "api_error",
			message: "The server is shutting down."})
		return
	}
	if req.URL.Path == modelsPath && req.Method == http.MethodGet {
		s.serveModels(w, req)
		return
	}
	if req.URL.Path != messagesPath || req.Method != http.MethodPost {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "not_found_error", message: "Not Found"})
		return
	}
	if e := s.checkHeaders(req); e != nil {
		writeError(w, e)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "request_too_large",
				message: "Request exceeds the maximum allowed number of bytes."})
		}
		return // otherwise the client went away
	}
	r, malformed, rejected := decodeRequest(body, s.opts.MaxOutputTokens)
	if malformed != nil {
		writeError(w, malformed)
		return
	}
	r.Version = req.Header.Get("Anthropic-Version")
	var blocks []cacheBlock
	if rejected == nil {
		blocks, rejected = cacheBlocks(body, r)
	}
	if rejected != nil {
		s.log.Add(r)
		writeError(w, rejected)
		return
	}
	// The cache is per organization (the API key stands for it) and model.
	u := s.cache.use(req.Header.Get("X-Api-Key"), r.Model, blocks)
	r.CacheBreakpoints = u.breakpoints
	r.CacheReadTokens, r.CacheCreationTokens = u.read, u.created
	r.PromptTokens = inputTokens(r)
	s.log.Add(r)
	s.answer(req.Context(), w, r, u)
}

// checkHeaders requires x-api-key (equal to Options.APIKey when set) and
// anthropic-version, with the real API's errors.
func (s *Server) checkHeaders(req *http.Request) *apiError {
	key := req.Header.Get("X-Api-Key")
	if key == "" {
		return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "x-api-key header is required"}
	}
	if s.opts.APIKey != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) != 1 {
		return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", message: "invalid x-api-key"}
	}
	if req.Header.Get("Anthropic-Version") == "" {
		return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: "anthropic-version: header is required"}
	}
	return nil
}

// answer runs the handler on a copy of r and writes its response.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, r Request, cache cacheUse) {
	h := *s.handler.Load()
	resp := h(r.clone())
	if resp.Status != 0 && resp.Status != http.StatusOK {
		writeError(w, responseError(resp))
		return
	}
	rp := reply{id: fmt.Sprintf("msg_fake%d", s.messages.Add(1)), model: r.Model, stop: resp.StopReason,
		blocks: []outBlock{}, pace: resp.Pace, streamErr: resp.StreamError, streamErrMsg: resp.StreamErrorMessage}
	if resp.Text != "" {
		text := resp.Text
		rp.blocks = append(rp.blocks, outBlock{Type: "text", Text: &text})
	}
	for _, tu := range resp.ToolUses {
		if tu.ID == "" {
			tu.ID = fmt.Sprintf("toolu_fake%d", s.toolUses.Add(1))
		}
		if tu.Input == "" {
			tu.Input = "{}"
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(tu.Input)); err != nil || compact.Bytes()[0] != '{' {
			writeError(w, &apiError{status: http.StatusInternalServerError, typ: "api_error",
				message: fmt.Sprintf("fakeanthropic: the handler's input for tool %q is not a JSON object", tu.Name)})
			return
		}
		rp.blocks = append(rp.blocks, outBlock{Type: "tool_use", ID: tu.ID, Name: tu.Name, Input: compact.Bytes()})
	}
	if rp.stop == "" {
		rp.stop = "end_turn"
		if len(resp.ToolUses) > 0 {
			rp.stop = "tool_use"
		}
	}
	rp.usage = outUsage{InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
		CacheReadInputTokens: cache.read, CacheCreationInputTokens: cache.created}
	if rp.usage.InputTokens == 0 {
		// What was neither read from nor written to the cache.
		rp.usage.InputTokens = max(inputTokens(r)-cache.read-cache.created, 0)
	}
	if rp.usage.OutputTokens == 0 {
		rp.usage.OutputTokens = outputTokens(resp)
	}
	if r.Stream {
		writeStream(ctx, w, rp)
	} else {
		writeMessage(w, rp)
	}
}
