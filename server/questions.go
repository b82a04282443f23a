package server

import (
	"errors"
	"net/http"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/questions"
)

// maxQuestionIDChars bounds the {id} of an answer: ids are short (the
// button data they ride in has 64 bytes); a longer one is no question.
const maxQuestionIDChars = 64

// answerRequest is the body of POST /api/questions/{id}/answer.
type answerRequest struct {
	// Choice is the number of the chosen choice, from 1.
	Choice *int `json:"choice"`
}

// handleAnswer answers a question the agent asked (chat_ask) as the
// caller's token identity, with the rules of a button press in the chat:
// once, from the person asked (or anyone, when the question says so),
// before it expires. The answer is a new turn in the question's chat.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ierr := s.readBody(w, r)
	if ierr == nil {
		var req answerRequest
		ierr = decodeStrict(body, &req)
		if ierr == nil && (req.Choice == nil || *req.Choice < 1 || *req.Choice > questions.MaxChoices) {
			ierr = invalid("choice must be the number of a choice, from 1 to %d", questions.MaxChoices)
		}
		if ierr == nil {
			s.answer(w, r, id, *req.Choice)
			return
		}
	}
	writeError(w, r, ierr.status, ierr.code, ierr.message)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, id string, choice int) {
	if id == "" || len(id) > maxQuestionIDChars {
		writeError(w, r, http.StatusNotFound, codeNotFound, "no such question")
		return
	}
	who := callerIdentity(r.Context())
	reply, err := s.opts.Door.Answer(r.Context(), id, choice, questions.Answerer{Identity: who, Name: who})
	var refused *engine.RefusalError
	switch {
	case err == nil:
		writeJSON(w, r, http.StatusOK, map[string]any{"answered": true, "reply": reply})
	case errors.Is(err, engine.ErrQuestionsOff):
		writeError(w, r, http.StatusNotFound, codeNotFound, "questions are not enabled")
	case errors.Is(err, questions.ErrUnknown):
		writeError(w, r, http.StatusNotFound, codeNotFound, "no such question")
	case errors.Is(err, questions.ErrChoice):
		// The client's mistake, as a bad body is; nothing was answered.
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, refusalText(err))
	case errors.As(err, &refused):
		writeError(w, r, http.StatusConflict, codeConflict, refused.Text)
	default:
		s.log.Error().Err(err).Str("requestId", requestID(r.Context())).Msg("answering a question")
		writeError(w, r, http.StatusInternalServerError, codeInternal, msgInternal)
	}
}

func refusalText(err error) string {
	var refused *engine.RefusalError
	if errors.As(err, &refused) {
		return refused.Text
	}
	return err.Error()
}

// handleQuestions lists a chat's questions that still take answers,
// newest first: {"chatKey", "questions": [{questionId, chatKey, question,
// choices, anyone, expiresAt}]}.
func (s *Server) handleQuestions(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("chatKey")
	if _, err := chat.EscapeChatKey(key); err != nil {
		writeError(w, r, http.StatusBadRequest, codeInvalidInput, "chatKey is not valid")
		return
	}
	open, err := s.opts.View.Questions(r.Context(), key)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if open == nil {
		open = []dispatch.Question{}
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"chatKey": key, "questions": open})
}
