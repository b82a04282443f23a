package main_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestE2EFilesAndQuestionsOverTheAPI is chat_send_file and chat_ask as an
// API user meets them: a PNG a command drew comes back as an artifact of
// /api/execute whose URL downloads it with the token (and not without);
// /etc/passwd is refused with the reason and nothing is sent; a question
// comes as a numbered list, and the number typed next is its answer, once.
func TestE2EFilesAndQuestionsOverTheAPI(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil && os.Getenv(envRequireBox) == "1" {
		t.Fatalf("no bwrap, and %s=1: %v", envRequireBox, err)
	}
	const token = "e2e-files-token"
	fake := startFake(t, showModel)
	dir := initProject(t)
	setTools(t, dir, `{"exec": {"enabled": true}, "allow": ["exec_shell"]}`)
	p := startShip(t, dir, modelEnv(fake, "SHIP_API_TOKEN="+token))
	auth := "Authorization: Bearer " + token

	r := p.do(t, "POST", "/api/execute", executeBody("files", "draw the chart"), auth)
	var res struct {
		Success   bool     `json:"success"`
		Replies   []string `json:"replies"`
		Artifacts []struct {
			Name, Kind, MIME, URL string
			Bytes                 int64
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || r.status != http.StatusOK {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "chart.png" || res.Artifacts[0].MIME != "image/png" || res.Artifacts[0].Kind != "image" {
		t.Fatalf("artifacts %+v (tool outputs %q)", res.Artifacts, toolOutputs(fake))
	}
	url := res.Artifacts[0].URL
	if got := p.do(t, "GET", url, "", auth); got.status != http.StatusOK || !bytes.Equal(got.body, tinyPNGBytes()) || got.header.Get("Content-Type") != "image/png" {
		t.Fatalf("downloading %s: %d %q", url, got.status, got.header.Get("Content-Type"))
	}
	if got := p.do(t, "GET", url, ""); got.status != http.StatusUnauthorized {
		t.Fatalf("downloading %s without the token: %d", url, got.status)
	}

	res.Artifacts = nil
	r = p.do(t, "POST", "/api/execute", executeBody("files", "send /etc/passwd"), auth)
	if err := json.Unmarshal(r.body, &res); err != nil || len(res.Artifacts) != 0 {
		t.Fatalf("execute passwd: %d %s", r.status, r.body)
	}
	outs := toolOutputs(fake)
	if last := outs[len(outs)-1]; !strings.Contains(last, "outside the project folder") || !strings.Contains(last, "nothing was sent") {
		t.Fatalf("refusal for /etc/passwd: %s", last)
	}

	r = p.do(t, "POST", "/api/execute", executeBody("ask", "deploy it"), auth)
	if err := json.Unmarshal(r.body, &res); err != nil || len(res.Replies) != 1 || !strings.Contains(res.Replies[0], "2. production") {
		t.Fatalf("execute deploy: %d %s", r.status, r.body)
	}
	asked := len(fake.Requests())
	p.do(t, "POST", "/api/execute", executeBody("ask", "2"), auth)
	p.do(t, "POST", "/api/execute", executeBody("ask", "2"), auth)
	reqs := fake.Requests()
	if len(reqs) != asked+2 || !strings.Contains(reqs[asked].LastUser(), "answered your question") ||
		!strings.Contains(reqs[asked].LastUser(), "2. production") || reqs[asked+1].LastUser() != "2" {
		var seen []string
		for _, q := range reqs[asked:] {
			seen = append(seen, q.LastUser())
		}
		t.Fatalf("after the question the model saw %q", seen)
	}
}
