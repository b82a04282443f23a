package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/engine"
	"github.com/shipmyagent/ship/runtime/media"
	"github.com/shipmyagent/ship/runtime/questions"
)

// What the bot showed a chat besides text: the files it sent
// (chat_send_file) and the questions it asked (chat_ask).

// download is a file the bot sent that the page offers as a link.
type download struct {
	Name, Size, URL string
}

// inlineImages are the image types the page shows as thumbnails: raster
// formats every browser decodes. An SVG can carry script and is offered
// as a download instead, like any other file.
var inlineImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// fileURL is where the console serves a file kept under .ship/files; name,
// when set, is what a download is saved as.
func fileURL(p, name string) string {
	u := "/console/files?path=" + url.QueryEscape(p)
	if name != "" {
		u += "&name=" + url.QueryEscape(name)
	}
	return u
}

// sentFiles fills v with the files of a chat_send_file entry (its
// meta.artifacts) and returns the entry's text without the "[sent …]"
// line the log adds for the model: the page shows the files themselves.
func (c *Console) sentFiles(v *entryView, e chat.ChatLogEntryV1) string {
	raw, err := json.Marshal(e.Meta["artifacts"])
	var arts []dispatch.Artifact
	if err != nil || json.Unmarshal(raw, &arts) != nil {
		return e.Text // a malformed list: the text names the files
	}
	for _, a := range arts {
		kept := strings.HasPrefix(a.Path, media.Dir+"/")
		switch {
		case kept && inlineImages[strings.ToLower(a.MIME)]:
			v.Images = append(v.Images, fileURL(a.Path, ""))
		case kept:
			v.Downloads = append(v.Downloads, download{Name: a.Name, Size: media.Size(a.Bytes), URL: fileURL(a.Path, a.Name)})
		default:
			v.Files = append(v.Files, a.Name)
		}
	}
	line := dispatch.FilesText("", arts)
	if e.Text == line {
		return ""
	}
	if caption, ok := strings.CutSuffix(e.Text, "\n"+line); ok {
		return caption
	}
	return e.Text
}

// questionView is a question the bot asked, as its entry shows it.
type questionView struct {
	ID      string
	Choices []string
	// Open: the question still takes answers, and the page shows a button
	// per choice; otherwise the choices are plain text.
	Open bool
	// Answer is the choice taken (from 1), when the log shows it; 0 for
	// an expired question or one answered by a number typed in the chat.
	Answer int
	// Checked: Open was looked up (the Chat page); search hits do not.
	Checked bool
}

// questionOf fills v.Question from a chat_ask entry and returns the
// question's own text (the log's text adds the numbered choices for the
// model and for chats without buttons; the page shows them as buttons).
// Whether it is open is set by the page (markQuestions).
func questionOf(v *entryView, e chat.ChatLogEntryV1) string {
	id, _ := e.Meta["questionId"].(string)
	raw, _ := json.Marshal(e.Meta["choices"])
	var choices []string
	if id == "" || json.Unmarshal(raw, &choices) != nil || len(choices) == 0 {
		return e.Text
	}
	v.Question = &questionView{ID: id, Choices: choices}
	text, ok := strings.CutSuffix(e.Text, dispatch.NumberedChoices(dispatch.Question{Choices: choices}))
	if !ok {
		return e.Text
	}
	return text
}

// markQuestions says which of the page's questions are open (open lists
// them, from View.Questions) and which choice answered the others, where
// the answer's own entry on the page tells (meta.questionId, meta.answer).
func markQuestions(entries []entryView, logged []chat.ChatLogEntryV1, open []dispatch.Question) {
	isOpen := make(map[string]bool, len(open))
	for _, q := range open {
		isOpen[strings.ToUpper(q.ID)] = true
	}
	answers := map[string]int{}
	for _, e := range logged {
		id, _ := e.Meta["questionId"].(string)
		n, _ := e.Meta["answer"].(float64) // numbers come back from JSON as float64
		if e.Role == chat.RoleUser && id != "" && n > 0 {
			answers[strings.ToUpper(id)] = int(n)
		}
	}
	for i := range entries {
		q := entries[i].Question
		if q == nil {
			continue
		}
		id := strings.ToUpper(q.ID)
		q.Open, q.Checked = isOpen[id], true
		if !q.Open {
			q.Answer = answers[id]
		}
	}
}

// answerer is the console's user as the one answering a question in
// chatKey. In an api chat, a console user is whoever the console sends
// as there (api:console signed in with the token, api:anonymous without
// one), which is who such a question is asked of: they answer as that,
// from that chat (the console can write in every api chat).
// Elsewhere they answer from outside the chat as the console's role, and
// the core refuses unless the question was asked of "console:<role>".
func (c *Console) answerer(chatKey string) questions.Answerer {
	name := "the console"
	if c.opts.Role != "" {
		name += " (" + c.opts.Role + ")"
	}
	if _, api := chat.APIChatID(chatKey); api {
		return questions.Answerer{Identity: c.identity(), Name: name, ChatKey: chatKey}
	}
	return questions.Answerer{Identity: "console:" + c.opts.Role, Name: name}
}

// handleAnswer takes a choice's button press on the Chat page through
// the same call as a press in the chat (engine.Door.Answer): once, from
// whom the question was asked of, before it expires. The answer says what
// happened in the words a chat gets ("Answered: B", "Already answered by
// @bob: A.").
func (c *Console) handleAnswer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := strconv.Atoi(r.PathValue("n"))
	if !validQuestionID(id) || err != nil || n < 1 || n > questions.MaxChoices {
		plain(w, http.StatusNotFound, "There is no such question or choice.")
		return
	}
	key := r.PostFormValue("chat") // read and checked by guard (readForm)
	if _, err := chat.EscapeChatKey(key); err != nil {
		plain(w, http.StatusBadRequest, "That is not a chat key.")
		return
	}
	by := c.answerer(key)
	reply, err := c.opts.Door.Answer(r.Context(), id, n, by)
	var refused *engine.RefusalError
	switch {
	case err == nil:
		c.log.Info().Str("question", strings.ToUpper(id)).Int("choice", n).Str("identity", by.Identity).Msg("question answered in the console")
		plain(w, http.StatusOK, reply)
	case errors.Is(err, engine.ErrQuestionsOff):
		plain(w, http.StatusConflict, "Questions are not enabled here.")
	case errors.As(err, &refused):
		status := http.StatusConflict
		switch {
		case errors.Is(err, questions.ErrUnknown):
			status = http.StatusNotFound
		case errors.Is(err, questions.ErrNotAsked), errors.Is(err, questions.ErrWrongChat):
			status = http.StatusForbidden
		}
		plain(w, status, refused.Text)
	default:
		c.fail(w, r, err)
	}
}

// validQuestionID is the shape of a question id: at most 12 ASCII
// letters and digits.
func validQuestionID(id string) bool {
	if id == "" || len(id) > 12 {
		return false
	}
	for _, ch := range id {
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}
