package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/policy"
)

const (
	defaultChatID = "default"
	// maxIDChars bounds userId and messageId: they are stored in every log
	// entry of the turn and are ids, not content.
	maxIDChars = 256
)

// executeRequest is the body of POST /api/execute. Pointers tell a missing
// or null field from an empty one.
type executeRequest struct {
	Instructions *string `json:"instructions"`
	ChatID       *string `json:"chatId"`
	UserID       *string `json:"userId"`
	ActorID      *string `json:"actorId"` // alias of userId
	MessageID    *string `json:"messageId"`
	// Tools narrows the tool policy for this run only (deny and
	// requireApproval lists; it can never allow more).
	Tools json.RawMessage `json:"tools"`
	// LLMConfig picks a configured model and call options for this run.
	LLMConfig *llmConfig `json:"llmConfig"`
}

// executeInput is a validated request.
type executeInput struct {
	instructions string
	chatID       string
	chatKey      string
	userID       string
	messageID    string
	// clientMessageID: the client chose messageID (a retry may repeat it),
	// rather than the server making one up.
	clientMessageID bool
	tools           policy.Narrowing
	llm             llm.Override
}

// inputError is a request the client must fix.
type inputError struct {
	status  int
	code    string
	message string
}

func invalid(format string, args ...any) *inputError {
	return &inputError{status: http.StatusBadRequest, code: codeInvalidInput, message: fmt.Sprintf(format, args...)}
}

// readExecute reads and validates the body of POST /api/execute. Nothing is
// recorded or queued before it succeeds, so a rejected request changes
// nothing.
func (s *Server) readExecute(w http.ResponseWriter, r *http.Request) (executeInput, *inputError) {
	body, ierr := s.readBody(w, r)
	if ierr != nil {
		return executeInput{}, ierr
	}
	var req executeRequest
	if ierr := decodeStrict(body, &req); ierr != nil {
		return executeInput{}, ierr
	}
	in, ierr := validateExecute(req, s.opts.MaxInstructionChars)
	if ierr != nil {
		return in, ierr
	}
	in.llm, ierr = s.checkLLMConfig(req.LLMConfig)
	return in, ierr
}

// readBody reads a request body within the size limit, refusing invalid
// UTF-8: encoding/json would silently turn it into U+FFFD, and the user's
// text must reach the model verbatim or not at all.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *inputError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &inputError{status: http.StatusRequestEntityTooLarge, code: codePayloadTooLarge,
				message: fmt.Sprintf("request body is over the limit of %d bytes", tooBig.Limit)}
		}
		return nil, invalid("reading request body: %v", err)
	}
	if !utf8.Valid(body) {
		return nil, invalid("request body is not valid UTF-8")
	}
	return body, nil
}

// decodeStrict decodes exactly one JSON object with only known fields
// into v.
func decodeStrict(body []byte, v any) *inputError {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return invalid("request body is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return invalid("request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("request body has data after the JSON object")
	}
	return nil
}

func jsonError(err error) *inputError {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return invalid("%s must be a %s", typeErr.Field, typeErr.Type)
	case errors.As(err, &syntaxErr):
		return invalid("request body is not valid JSON: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("request body is not valid JSON: it ends too early")
	default:
		// Unknown fields arrive as a plain error: `json: unknown field "x"`.
		return invalid("request body is invalid: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
}

func validateExecute(req executeRequest, maxChars int) (executeInput, *inputError) {
	var in executeInput
	if req.Instructions == nil || strings.TrimSpace(*req.Instructions) == "" {
		return in, invalid("instructions is required and must not be blank")
	}
	// Kept verbatim (not trimmed): the model sees exactly what was sent.
	in.instructions = *req.Instructions
	if n := utf8.RuneCountInString(in.instructions); n > maxChars {
		return in, invalid("instructions is too long: %d characters, the limit is %d", n, maxChars)
	}

	tools, err := policy.ParseNarrowing(req.Tools)
	if err != nil {
		return in, invalid("%s", strings.TrimPrefix(err.Error(), policy.ErrConfig.Error()+": "))
	}
	in.tools = tools

	in.chatID = defaultChatID
	if req.ChatID != nil {
		in.chatID = *req.ChatID
	}
	key, err := chat.APIChatKey(in.chatID)
	if err != nil {
		return in, invalid("chatId must be 1 to %d characters of A-Z a-z 0-9 . _ : @ -", chat.MaxAPIChatIDLen)
	}
	in.chatKey = key

	user, actor := deref(req.UserID), deref(req.ActorID)
	if user != "" && actor != "" && user != actor {
		return in, invalid("userId and actorId are the same field; send one of them")
	}
	in.userID = user
	if in.userID == "" {
		in.userID = actor
	}
	if ierr := checkID("userId", in.userID); ierr != nil {
		return in, ierr
	}

	in.messageID = deref(req.MessageID)
	if ierr := checkID("messageId", in.messageID); ierr != nil {
		return in, ierr
	}
	in.clientMessageID = in.messageID != ""
	if !in.clientMessageID {
		in.messageID = "api-" + randomHex(16)
	}
	return in, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// checkID validates an optional id: "" means absent.
func checkID(field, v string) *inputError {
	if v == "" {
		return nil
	}
	if strings.TrimSpace(v) == "" {
		return invalid("%s must not be blank", field)
	}
	if utf8.RuneCountInString(v) > maxIDChars {
		return invalid("%s is too long: the limit is %d characters", field, maxIDChars)
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return invalid("%s must not contain control characters", field)
	}
	return nil
}
