package fakeopenai

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
)

const transcriptionPath = "/v1/audio/transcriptions"

// audioFormats are the file extensions the real endpoint takes; it tells
// the format by the file name, not by the bytes.
var audioFormats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// Transcription is one recorded call of POST /v1/audio/transcriptions.
type Transcription struct {
	Model          string
	FileName       string
	Audio          []byte
	Language       string
	ResponseFormat string
}

// TranscriptionResponse is what a Transcriber wants the endpoint to answer.
type TranscriptionResponse struct {
	Text string
	// Status is the HTTP status; 0 means 200. Any other value sends the
	// error body with ErrorMessage.
	Status       int
	ErrorMessage string
}

// Transcriber scripts the transcription endpoint; it is called once for
// every valid request, possibly from several goroutines at once.
type Transcriber func(Transcription) TranscriptionResponse

// EchoTranscriber is the default: the text is "transcript of <file name>".
func EchoTranscriber(t Transcription) TranscriptionResponse {
	return TranscriptionResponse{Text: "transcript of " + t.FileName}
}

// SetTranscriber replaces the scripted transcription; nil means
// EchoTranscriber.
func (s *Server) SetTranscriber(f Transcriber) {
	if f == nil {
		f = EchoTranscriber
	}
	s.transcriber.Store(&f)
}

// Transcriptions returns copies of the recorded transcription requests in
// arrival order (those with a readable multipart body).
func (s *Server) Transcriptions() []Transcription { return s.audioLog.All() }

func cloneTranscription(t Transcription) Transcription {
	t.Audio = slices.Clone(t.Audio)
	return t
}

// serveTranscription answers like the real endpoint: multipart/form-data
// with "file" and "model", a file name with a supported extension, and
// {"text": …} for response_format json (the default) or the bare text for
// "text".
func (s *Server) serveTranscription(w http.ResponseWriter, req *http.Request) {
	if !s.admitPost(w, req) {
		return
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		writeError(w, invalid("", "", "Invalid Content-Type header (%q), expected multipart/form-data.", req.Header.Get("Content-Type")))
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, maxBodyBytes)
	if err := req.ParseMultipartForm(maxBodyBytes); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				message: "Maximum content size limit (26214400) exceeded."})
			return
		}
		writeError(w, invalid("", "", "Could not parse multipart form"))
		return
	}
	defer func() { _ = req.MultipartForm.RemoveAll() }()
	t := Transcription{Model: req.FormValue("model"), Language: req.FormValue("language"), ResponseFormat: req.FormValue("response_format")}
	f, hdr, err := req.FormFile("file")
	if err == nil {
		t.FileName = hdr.Filename
		t.Audio, err = io.ReadAll(f)
		_ = f.Close()
	}
	if err != nil {
		writeError(w, invalid("file", "", "you must provide a file"))
		return
	}
	s.audioLog.Add(t)
	if t.Model == "" {
		writeError(w, invalid("model", "", "you must provide a model parameter"))
		return
	}
	if ext := strings.TrimPrefix(strings.ToLower(path.Ext(t.FileName)), "."); !slices.Contains(audioFormats, ext) {
		writeError(w, invalid("file", "invalid_value", "Invalid file format. Supported formats: %s",
			"['"+strings.Join(audioFormats, "', '")+"']"))
		return
	}
	resp := (*s.transcriber.Load())(cloneTranscription(t))
	if resp.Status != 0 && resp.Status != http.StatusOK {
		msg := resp.ErrorMessage
		if msg == "" {
			msg = http.StatusText(resp.Status)
		}
		writeError(w, &apiError{status: resp.Status, typ: "server_error", message: msg})
		return
	}
	if t.ResponseFormat == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, resp.Text+"\n")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": resp.Text})
}
