package fakeanthropic

import "net/http"

// modelsPath lists the models (GET), as `ship doctor` calls it.
const modelsPath = "/v1/models"

// defaultModels are the ids GET /v1/models lists when Options.Models is
// empty.
var defaultModels = []string{"claude-sonnet-4-5", "claude-haiku-4-5"}

// serveModels answers GET /v1/models as Anthropic documents it
// (https://docs.anthropic.com/en/api/models-list: "List available models";
// each item is a ModelInfo {id, created_at (RFC 3339), display_name,
// type:"model"}, the page carries has_more, first_id and last_id). The
// headers are checked as for /v1/messages: x-api-key and
// anthropic-version are required on every request.
func (s *Server) serveModels(w http.ResponseWriter, req *http.Request) {
	if e := s.checkHeaders(req); e != nil {
		writeError(w, e)
		return
	}
	ids := s.opts.Models
	if len(ids) == 0 {
		ids = defaultModels
	}
	type modelInfo struct {
		ID          string `json:"id"`
		CreatedAt   string `json:"created_at"`
		DisplayName string `json:"display_name"`
		Type        string `json:"type"`
	}
	page := struct {
		Data    []modelInfo `json:"data"`
		HasMore bool        `json:"has_more"`
		FirstID *string     `json:"first_id"`
		LastID  *string     `json:"last_id"`
	}{Data: make([]modelInfo, 0, len(ids))}
	for _, id := range ids {
		page.Data = append(page.Data, modelInfo{ID: id, CreatedAt: "2025-09-29T00:00:00Z", DisplayName: id, Type: "model"})
	}
	if len(ids) > 0 {
		page.FirstID, page.LastID = &ids[0], &ids[len(ids)-1]
	}
	s.modelLists.Add(1)
	writeJSON(w, http.StatusOK, page)
}

// ModelLists returns how many GET /v1/models calls were answered.
func (s *Server) ModelLists() int { return int(s.modelLists.Load()) }
