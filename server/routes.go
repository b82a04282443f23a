package server

import "net/http"

// Route is one route of the HTTP API: a method and a net/http ServeMux
// pattern ("/api/sse/{key}"), exactly as the server registers it.
type Route struct {
	Method  string
	Pattern string
}

// apiRoute is a Route with the handler New registers for it.
type apiRoute struct {
	Route
	handle func(*Server, http.ResponseWriter, *http.Request)
}

// apiRoutes is the one list New registers the API from, so Routes (and the
// test that holds docs/openapi.yaml to it) cannot drift from what is served.
// A new route goes here and into docs/openapi.yaml.
func apiRoutes() []apiRoute {
	return []apiRoute{
		{Route{http.MethodGet, "/health"}, (*Server).handleHealth},
		{Route{http.MethodGet, "/api/status"}, (*Server).handleStatus},
		{Route{http.MethodPost, "/api/execute"}, (*Server).handleExecute},
		{Route{http.MethodPost, "/api/send"}, (*Server).handleSend},
		{Route{http.MethodGet, "/api/sse"}, (*Server).handleSSE},
		{Route{http.MethodGet, "/api/sse/{key}"}, (*Server).handleSSE},
		{Route{http.MethodGet, "/api/models"}, (*Server).handleModels},
		{Route{http.MethodGet, "/api/tools"}, (*Server).handleTools},
		{Route{http.MethodGet, "/api/chats"}, (*Server).handleChats},
		{Route{http.MethodGet, "/api/chats/{chatKey}/messages"}, (*Server).handleMessages},
		{Route{http.MethodGet, "/api/chats/{chatKey}/questions"}, (*Server).handleQuestions},
		{Route{http.MethodPost, "/api/questions/{id}/answer"}, (*Server).handleAnswer},
		{Route{http.MethodGet, "/api/files/{path...}"}, (*Server).handleFile},
		{Route{http.MethodGet, "/api/tasks"}, (*Server).handleTasks},
		{Route{http.MethodPost, "/api/tasks/{name}/run"}, (*Server).handleRunTask},
		{Route{http.MethodGet, metricsPath}, (*Server).handleMetrics},
	}
}

// Routes lists the routes of the HTTP API (GET /health, GET /metrics and
// everything under /api/) in the order they are registered. The console's pages and the
// platforms' webhooks (Options.Webhooks) are not among them.
func Routes() []Route {
	all := apiRoutes()
	routes := make([]Route, len(all))
	for i, rt := range all {
		routes[i] = rt.Route
	}
	return routes
}
