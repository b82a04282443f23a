package console

import (
	"errors"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// maxFormBytes bounds a form posted to the console: a message of the
// largest size allowed, escaped, and room to spare.
const maxFormBytes = 256 << 10

// readForm reads a posted form once, before anything looks at it, and
// answers itself (and returns false) when the body is too big, is not a
// form, or holds text that is not UTF-8. Every value the console takes
// from a form is thereby valid UTF-8: a message goes to the model verbatim
// or not at all, and a bad one is the sender's mistake (400), never ship's
// (the chat log refuses invalid UTF-8, which used to surface as a 500).
func readForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	// ParseMultipartForm parses an urlencoded body too (and says
	// ErrNotMultipart after doing so); the console's own forms are
	// urlencoded, but a hand-made multipart one is read the same way.
	err := r.ParseMultipartForm(maxFormBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		plain(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is over %d KB.", maxFormBytes>>10))
		return false
	case err != nil && !errors.Is(err, http.ErrNotMultipart):
		plain(w, http.StatusBadRequest, "The request body is not a form the console can read.")
		return false
	}
	for k, vs := range r.PostForm {
		if !utf8.ValidString(k) {
			plain(w, http.StatusBadRequest, "The form is not valid UTF-8 text.")
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				plain(w, http.StatusBadRequest, "The form's "+k+" is not valid UTF-8 text.")
				return false
			}
		}
	}
	return true
}
