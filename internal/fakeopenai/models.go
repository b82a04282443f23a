package fakeopenai

import (
	"fmt"
	"net/http"
)

// modelsPath lists the models (GET), as `ship doctor` calls it.
const modelsPath = "/v1/models"

// defaultModels are the ids GET /v1/models lists when Options.Models is
// empty.
var defaultModels = []string{"gpt-4o-mini", "gpt-4o"}

// serveModels answers GET /v1/models in the shape OpenAI documents
// (https://platform.openai.com/docs/api-reference/models/list: "Lists the
// currently available models"; the body is {"object":"list","data":[{"id",
// "object":"model","created","owned_by"}]}). It takes the same Bearer key
// as every other endpoint, so a wrong key is a 401 here too.
func (s *Server) serveModels(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
			message: fmt.Sprintf("Invalid method for URL (%s %s)", req.Method, req.URL.Path)})
		return
	}
	if e := s.checkAuth(req); e != nil {
		writeError(w, e)
		return
	}
	ids := s.opts.Models
	if len(ids) == 0 {
		ids = defaultModels
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, 0, len(ids))}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: 1_700_000_000, OwnedBy: "system"})
	}
	s.modelLists.Add(1)
	writeJSON(w, http.StatusOK, list)
}

// ModelLists returns how many GET /v1/models calls were answered.
func (s *Server) ModelLists() int { return int(s.modelLists.Load()) }
