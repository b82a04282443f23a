package fakeopenai

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shipmyagent/ship/internal/fakehttp"
)

const (
	chatPath     = "/v1/chat/completions"
	maxBodyBytes = 32 << 20
)

// Options configures StartWithOptions.
type Options struct {
	// APIKey, when set, makes every request without
	// "Authorization: Bearer <APIKey>" fail with 401 and the error body.
	APIKey string
	// MaxRecorded, when positive, keeps only the most recent MaxRecorded
	// requests for Requests (useful for long load tests). RequestCount
	// still counts every recorded request.
	MaxRecorded int
	// Now is the prompt cache's clock (time.Now when nil): a test moves
	// it to see a cached prefix expire.
	Now func() time.Time
	// Models are the ids GET /v1/models lists (default gpt-4o-mini and
	// gpt-4o); chat completions accept any model either way.
	Models []string
	// NoModelList answers GET /v1/models with 404, as some
	// OpenAI-compatible servers do that serve only chat completions.
	NoModelList bool
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	opts    Options
	srv     *fakehttp.Server
	log     fakehttp.Log[Request]
	handler atomic.Pointer[Handler]
	cache   promptCache

	firstMu     sync.Mutex
	firstPieces []time.Time
	audioLog    fakehttp.Log[Transcription]
	transcriber atomic.Pointer[Transcriber]

	completions atomic.Int64 // numbers chatcmpl-<n>
	calls       atomic.Int64 // numbers call_<n>
	modelLists  atomic.Int64 // GET /v1/models answered
}

// Start starts a fake on 127.0.0.1 on a free port, answering with h
// (EchoChatSend when h is nil). It performs no API-key check.
func Start(h Handler) (*Server, error) {
	return StartWithOptions(h, Options{})
}

// StartWithOptions is Start with options.
func StartWithOptions(h Handler, opts Options) (*Server, error) {
	s := &Server{opts: opts, log: fakehttp.Log[Request]{Max: opts.MaxRecorded, Clone: Request.clone},
		audioLog: fakehttp.Log[Transcription]{Max: opts.MaxRecorded, Clone: cloneTranscription}}
	s.cache.now = opts.Now
	if s.cache.now == nil {
		s.cache.now = time.Now
	}
	s.SetHandler(h)
	s.SetTranscriber(nil)
	if _, err := fakehttp.Start("fakeopenai", func(srv *fakehttp.Server) http.Handler {
		s.srv = srv
		return http.HandlerFunc(s.serveHTTP)
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// URL returns the server root, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.srv.URL() }

// BaseURL returns "http://127.0.0.1:PORT/v1", the value for openai.WithBaseURL.
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
// request whose body was valid JSON is recorded, including ones then
// rejected for breaking the API's rules.
func (s *Server) Requests() []Request { return s.log.All() }

// RequestCount returns how many requests have been recorded.
func (s *Server) RequestCount() int { return s.log.Count() }

// Close stops accepting connections, waits for the requests being answered
// to finish (requests that arrive on an open connection meanwhile get 503),
// then closes every connection. It is safe to call more than once.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if s.srv.Closing() {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error",
			message: "The server is shutting down."})
		return
	}

	if req.URL.Path == transcriptionPath {
		s.serveTranscription(w, req)
		return
	}
	if req.URL.Path == modelsPath && !s.opts.NoModelList {
		s.serveModels(w, req)
		return
	}
	if req.URL.Path != chatPath {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid URL (%s %s)", req.Method, req.URL.Path)})
		return
	}
	if !s.admitPost(w, req) {
		return
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil ||
		(mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		writeError(w, &apiError{status: http.StatusUnsupportedMediaType, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid Content-Type header (%q), expected application/json.",
				req.Header.Get("Content-Type"))})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				message: "Request body too large."})
		}
		return // otherwise the client went away
	}
	r, malformed, rejected := decodeRequest(body)
	if malformed != nil {
		writeError(w, malformed)
		return
	}
	if rejected != nil {
		s.log.Add(r)
		writeError(w, rejected)
		return
	}
	// The cache is per organization (the API key stands for it) and model.
	r.PromptTokens = promptTokens(r)
	r.CachedTokens = s.cache.lookup(req.Header.Get("Authorization")+"\x00"+r.Model, promptUnits(r), r.PromptTokens)
	s.log.Add(r)
	s.answer(req.Context(), w, r)
}

// admitPost answers a request that is not a POST or lacks the API key as
// the real API does, and reports whether the request may go on.
func (s *Server) admitPost(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid method for URL (%s %s)", req.Method, req.URL.Path)})
		return false
	}
	if e := s.checkAuth(req); e != nil {
		writeError(w, e)
		return false
	}
	return true
}

func (s *Server) checkAuth(req *http.Request) *apiError {
	if s.opts.APIKey == "" {
		return nil
	}
	auth := req.Header.Get("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || key == "" {
		return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error",
			message: "You didn't provide an API key. You need to provide your API key in an Authorization " +
				"header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."}
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) != 1 {
		return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
			message: "Incorrect API key provided: " + redact(key) + ". You can find your API key at " +
				"https://platform.openai.com/account/api-keys."}
	}
	return nil
}

// redact keeps the first and last characters of a key, as the real API does.
func redact(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// answer runs the handler on a copy of r and writes its response.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, r Request) {
	h := *s.handler.Load()
	resp := h(r.clone())
	prompt := promptTokens(r)
	if resp.Status != 0 && resp.Status != http.StatusOK {
		writeError(w, responseError(resp, prompt))
		return
	}
	resp.ToolCalls = append([]ToolCall(nil), resp.ToolCalls...)
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].ID == "" {
			resp.ToolCalls[i].ID = fmt.Sprintf("call_%d", s.calls.Add(1))
		}
		if resp.ToolCalls[i].Arguments == "" {
			resp.ToolCalls[i].Arguments = "{}"
		}
	}
	rp := reply{
		id:           fmt.Sprintf("chatcmpl-%d", s.completions.Add(1)),
		created:      time.Now().Unix(),
		model:        r.Model,
		resp:         resp,
		includeUsage: r.includeUsage,
		firstPiece:   s.noteFirstPiece,
	}
	if rp.model == "" {
		rp.model = "fake"
	}
	rp.usage.PromptTokens = resp.PromptTokens
	if rp.usage.PromptTokens == 0 {
		rp.usage.PromptTokens = prompt
	}
	rp.usage.PromptTokensDetails.CachedTokens = min(r.CachedTokens, rp.usage.PromptTokens)
	rp.usage.CompletionTokens = resp.CompletionTokens
	if rp.usage.CompletionTokens == 0 {
		rp.usage.CompletionTokens = completionTokens(resp)
	}
	rp.usage.TotalTokens = rp.usage.PromptTokens + rp.usage.CompletionTokens
	if r.Stream {
		writeStream(ctx, w, rp)
	} else {
		writeCompletion(w, rp)
	}
}

func (s *Server) noteFirstPiece(at time.Time) {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	s.firstPieces = append(s.firstPieces, at)
}

// FirstPieces returns when each streamed answer's first piece of text or
// tool-call arguments was flushed to the client, oldest first: the model's
// "first token", for latency measurements.
func (s *Server) FirstPieces() []time.Time {
	s.firstMu.Lock()
	defer s.firstMu.Unlock()
	return slices.Clone(s.firstPieces)
}
