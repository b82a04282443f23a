package faketelegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const maxBody = 64 << 20

// maxMultipart caps an upload request: an album of ten files at the limit
// of each. Parts beyond multipartMemory spill to temporary files.
const (
	maxMultipart    = maxAlbum*maxUploadBytes + 1<<20
	multipartMemory = 32 << 20
)

// request is one Bot API call, its parameters gathered from the query
// string and the body (form, multipart or JSON), values as strings.
type request struct {
	r     *http.Request
	p     params
	files map[string]*multipart.FileHeader
}

type params map[string]string

// int parses an integer parameter leniently, as the real server does
// (anything unparsable is 0).
func (p params) int(k string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(p[k]), 10, 64)
	return n
}

func (p params) bool(k string) bool {
	v := strings.ToLower(strings.TrimSpace(p[k]))
	return v == "true" || v == "1"
}

// apiError is an {"ok":false} answer.
type apiError struct {
	status, code int
	desc         string
	params       *respParams
}

type respParams struct {
	MigrateToChatID int64 `json:"migrate_to_chat_id,omitempty"`
	RetryAfter      int   `json:"retry_after,omitempty"`
}

func badRequest(format string, a ...any) *apiError {
	return &apiError{status: 400, code: 400, desc: "Bad Request: " + fmt.Sprintf(format, a...)}
}

var (
	errUnauthorized  = &apiError{status: 401, code: 401, desc: "Unauthorized"}
	errNotFound      = &apiError{status: 404, code: 404, desc: "Not Found"}
	errWebhookActive = &apiError{status: 409, code: 409,
		desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	errTerminated = &apiError{status: 409, code: 409,
		desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
)

// described is a result answered together with a "description".
type described struct {
	result any
	desc   string
}

type methodFunc func(s *Server, rq *request) (any, *apiError)

// methods maps lower-case method names to their handlers.
var methods = map[string]methodFunc{
	"getme":                  (*Server).getMe,
	"getupdates":             (*Server).getUpdates,
	"setwebhook":             (*Server).setWebhook,
	"deletewebhook":          (*Server).deleteWebhook,
	"getwebhookinfo":         (*Server).getWebhookInfo,
	"sendmessage":            (*Server).sendMessage,
	"sendphoto":              func(s *Server, rq *request) (any, *apiError) { return s.sendFile(rq, "photo") },
	"senddocument":           func(s *Server, rq *request) (any, *apiError) { return s.sendFile(rq, "document") },
	"sendvideo":              func(s *Server, rq *request) (any, *apiError) { return s.sendFile(rq, "video") },
	"sendaudio":              func(s *Server, rq *request) (any, *apiError) { return s.sendFile(rq, "audio") },
	"sendvoice":              func(s *Server, rq *request) (any, *apiError) { return s.sendFile(rq, "voice") },
	"sendmediagroup":         (*Server).sendMediaGroup,
	"sendchataction":         (*Server).sendChatAction,
	"getfile":                (*Server).getFile,
	"getchat":                (*Server).getChat,
	"setmycommands":          alwaysTrue,
	"deletemycommands":       alwaysTrue,
	"getmycommands":          func(*Server, *request) (any, *apiError) { return []any{}, nil },
	"answercallbackquery":    (*Server).answerCallbackQuery,
	"editmessagetext":        (*Server).editMessageText,
	"editmessagereplymarkup": (*Server).editMessageReplyMarkup,
	"sendmessagedraft":       (*Server).sendMessageDraft,
	"deletemessage":          (*Server).deleteMessage,
}

func alwaysTrue(*Server, *request) (any, *apiError) { return true, nil }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, &apiError{status: 503, code: 503, desc: "Service Unavailable"})
		return
	}
	s.active++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.active--; s.active == 0 {
			s.idle.Broadcast()
		}
		s.mu.Unlock()
	}()

	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		writeError(w, errNotFound)
		return
	}
	token, method, _ := strings.Cut(rest, "/")
	key := strings.ToLower(method)

	s.mu.Lock()
	s.calls[key]++
	authorized := token == s.opts.Token
	var fail *Failure
	if fs := s.fails[key]; authorized && len(fs) > 0 {
		f := fs[0]
		fail = &f
		if s.fails[key] = fs[1:]; len(fs) == 1 {
			delete(s.fails, key)
		}
	} else if st := s.always[key]; authorized && st != nil {
		if st.after > 0 {
			st.after--
		} else {
			f := st.f
			fail = &f
		}
	}
	if fail != nil {
		s.failed = append(s.failed, Failed{Method: method, Failure: *fail, At: time.Now()})
		broadcast(&s.eventCh)
	}
	s.mu.Unlock()

	h := methods[key]
	switch {
	case !authorized:
		writeError(w, errUnauthorized)
		return
	case fail != nil:
		writeError(w, fail.apiError())
		return
	case h == nil:
		writeError(w, errNotFound)
		return
	}
	rq, e := readRequest(r)
	if r.MultipartForm != nil {
		defer func() { _ = r.MultipartForm.RemoveAll() }()
	}
	if e == nil {
		e = s.spend(method, key, rq)
	}
	if e == nil {
		var res any
		if res, e = h(s, rq); e == nil {
			writeResult(w, res)
			return
		}
	}
	writeError(w, e)
}

// readRequest gathers the parameters: query string first, then the body.
func readRequest(r *http.Request) (*request, *apiError) {
	rq := &request{r: r, p: params{}}
	for k, v := range r.URL.Query() {
		rq.p[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			return nil, badRequest("can't read request body")
		}
		if len(bytes.TrimSpace(body)) == 0 {
			break
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, badRequest("can't parse JSON object")
		}
		for k, v := range m {
			var str string
			switch {
			case json.Unmarshal(v, &str) == nil:
				rq.p[k] = str
			case string(v) != "null":
				rq.p[k] = string(v)
			}
		}
	case "multipart/form-data":
		r.Body = http.MaxBytesReader(nil, r.Body, maxMultipart)
		if err := r.ParseMultipartForm(multipartMemory); err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return nil, errTooLarge
			}
			return nil, badRequest("can't parse multipart/form-data request")
		}
		for k, v := range r.MultipartForm.Value {
			rq.p[k] = v[0]
		}
		rq.files = map[string]*multipart.FileHeader{}
		for k, v := range r.MultipartForm.File {
			rq.files[k] = v[0]
		}
	default:
		r.Body = http.MaxBytesReader(nil, r.Body, maxBody)
		if err := r.ParseForm(); err != nil {
			return nil, badRequest("can't parse request body")
		}
		for k, v := range r.PostForm {
			rq.p[k] = v[0]
		}
	}
	return rq, nil
}

type okBody struct {
	OK          bool   `json:"ok"`
	Result      any    `json:"result"`
	Description string `json:"description,omitempty"`
}

type errBody struct {
	OK          bool        `json:"ok"`
	ErrorCode   int         `json:"error_code"`
	Description string      `json:"description"`
	Parameters  *respParams `json:"parameters,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeResult(w http.ResponseWriter, res any) {
	if d, ok := res.(described); ok {
		writeJSON(w, http.StatusOK, okBody{OK: true, Result: d.result, Description: d.desc})
		return
	}
	writeJSON(w, http.StatusOK, okBody{OK: true, Result: res})
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, errBody{ErrorCode: e.code, Description: e.desc, Parameters: e.params})
}

// apiError turns an injected Failure into an answer, filling defaults.
func (f Failure) apiError() *apiError {
	code := f.ErrorCode
	if code == 0 {
		code = f.Status
	}
	if code == 0 {
		switch {
		case f.RetryAfter > 0:
			code = 429
		case f.MigrateToChatID != 0:
			code = 400
		default:
			code = 500
		}
	}
	status := f.Status
	if status == 0 {
		status = code
	}
	if status < 100 || status > 999 {
		status = 500
	}
	desc := f.Description
	if desc == "" {
		desc = defaultDescription(code, f)
	}
	var p *respParams
	if f.RetryAfter > 0 || f.MigrateToChatID != 0 {
		p = &respParams{MigrateToChatID: f.MigrateToChatID, RetryAfter: f.RetryAfter}
	}
	return &apiError{status: status, code: code, desc: desc, params: p}
}

func defaultDescription(code int, f Failure) string {
	switch code {
	case 400:
		if f.MigrateToChatID != 0 {
			return "Bad Request: group chat was upgraded to a supergroup chat"
		}
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden: bot was blocked by the user"
	case 404:
		return "Not Found"
	case 409:
		return "Conflict"
	case 429:
		return fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter)
	}
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Internal Server Error"
}

type botInfo struct {
	ID                      int64  `json:"id"`
	IsBot                   bool   `json:"is_bot"`
	FirstName               string `json:"first_name"`
	Username                string `json:"username"`
	CanJoinGroups           bool   `json:"can_join_groups"`
	CanReadAllGroupMessages bool   `json:"can_read_all_group_messages"`
	SupportsInlineQueries   bool   `json:"supports_inline_queries"`
	CanConnectToBusiness    bool   `json:"can_connect_to_business"`
	HasMainWebApp           bool   `json:"has_main_web_app"`
}

func (s *Server) getMe(*request) (any, *apiError) {
	return botInfo{ID: s.opts.BotID, IsBot: true, FirstName: "Ship Test Bot", Username: s.opts.BotUsername,
		CanJoinGroups: true}, nil
}

func (s *Server) getChat(rq *request) (any, *apiError) {
	id, e := s.resolveChat(rq.p)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chats[id]; c != nil {
		return c.raw, nil
	}
	return nil, badRequest("chat not found")
}

func (s *Server) getFile(rq *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.files[strings.TrimSpace(rq.p["file_id"])]
	if f == nil {
		return nil, badRequest("invalid file_id")
	}
	return map[string]any{"file_id": f.id, "file_unique_id": f.unique, "file_size": len(f.content),
		"file_path": f.path}, nil
}

// serveFile answers GET /file/bot<token>/<file_path>.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	f := s.byPath[path]
	s.mu.Unlock()
	if token != s.opts.Token || f == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		writeError(w, errNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.content)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.content)
}
