// Package deploy_test checks the container files (../Dockerfile and the
// compose files here) as far as a machine without a container engine can:
// they parse, every setting they give ship is one ship reads and accepts,
// the NATS configurations form one three-node JetStream cluster (read by
// nats-server's own parser), and the binary built the way the Dockerfile
// builds it runs the quick start as the image would (quickstart_test.go).
package deploy_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// compose is the part of a compose file these tests read (the Compose
// Specification's service attributes of the same names).
type compose struct {
	Services map[string]service `yaml:"services"`
	Volumes  map[string]any     `yaml:"volumes"`
}

type service struct {
	Image       string            `yaml:"image"`
	Build       map[string]string `yaml:"build"`
	Init        bool              `yaml:"init"`
	Restart     string            `yaml:"restart"`
	Command     []string          `yaml:"command"`
	EnvFile     []string          `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	ReadOnly    bool              `yaml:"read_only"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	DependsOn map[string]map[string]string `yaml:"depends_on"`
}

// readCompose decodes a compose file strictly: an attribute misspelled in
// one of the fields above is an error, not an ignored line.
func readCompose(t *testing.T, path string) compose {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	if len(c.Services) == 0 {
		t.Fatalf("%s has no services", path)
	}
	return c
}

// envFileKeys are the variables an env file example names, set or
// commented out ("# TELEGRAM_BOT_TOKEN=").
func envFileKeys(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := regexp.MustCompile(`^#?\s*([A-Z][A-Z0-9_]*)=`)
	var keys []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := key.FindStringSubmatch(sc.Text()); m != nil {
			keys = append(keys, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// shipReads reports whether ship's own code names the variable as a string
// literal: a variable that none does is a typo ship would silently ignore.
// (What each one does is ship's config tests' business.)
func shipReads(t *testing.T, names []string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	for _, root := range []string{"../runtime", "../cmd", "../adapters", "../server", "../tools"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, n := range names {
				if strings.Contains(string(src), `"`+n+`"`) {
					found[n] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found
}

func TestOneProcessCompose(t *testing.T) {
	c := readCompose(t, "compose.yml")
	s, ok := c.Services["ship"]
	if !ok || len(c.Services) != 1 {
		t.Fatalf("want one service, ship; have %v", c.Services)
	}
	if s.Build["context"] != ".." || s.Build["dockerfile"] != "Dockerfile" {
		t.Errorf("build %v: want the repository root's Dockerfile", s.Build)
	}
	if !s.Init || s.Restart != "unless-stopped" || !s.ReadOnly {
		t.Errorf("init %v, restart %q, read_only %v: want an init, a restart policy and a read-only root", s.Init, s.Restart, s.ReadOnly)
	}
	if !hasVolume(s, "/project") {
		t.Errorf("volumes %v: the project folder must be a volume", s.Volumes)
	}
	if len(s.EnvFile) != 1 || s.EnvFile[0] != "ship.env" {
		t.Errorf("env_file %v: secrets come from ship.env", s.EnvFile)
	}
	if len(s.Ports) != 1 || !strings.HasPrefix(s.Ports[0], "127.0.0.1:") || !strings.HasSuffix(s.Ports[0], ":3000") {
		t.Errorf("ports %v: want ship's port 3000 published on loopback only", s.Ports)
	}
	checkHealth(t, "ship", s.Healthcheck.Test, "http://127.0.0.1:3000/health")

	keys := envFileKeys(t, "ship.env.example")
	reads := shipReads(t, keys)
	for _, k := range keys {
		if !reads[k] {
			t.Errorf("ship.env.example names %s, which ship does not read", k)
		}
	}
	if !reads["SHIP_API_TOKEN"] || !strings.Contains(strings.Join(keys, " "), "SHIP_API_TOKEN") {
		t.Error("ship.env.example must name SHIP_API_TOKEN: ship refuses to listen on 0.0.0.0 without it")
	}
}

func hasVolume(s service, target string) bool {
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			return true
		}
	}
	return false
}

// checkHealth wants a health check that runs curl (the image has it) on
// url, failing on an HTTP error.
func checkHealth(t *testing.T, name string, test []string, url string) {
	t.Helper()
	if len(test) < 3 || test[0] != "CMD" || test[1] != "curl" || !strings.Contains(strings.Join(test, " "), "-fsS") || test[len(test)-1] != url {
		t.Errorf("%s healthcheck %q: want [CMD curl -fsS ... %s]", name, test, url)
	}
}

// dockerfile is the Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	cur := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") && cur == "" {
			continue
		}
		line = strings.TrimRight(line, " ")
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		if cur+line != "" {
			out = append(out, strings.Join(strings.Fields(cur+line), " "))
		}
		cur = ""
	}
	return out
}

// instruction returns the arguments of every instruction named op.
func instruction(lines []string, op string) []string {
	var out []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, op+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	lines := dockerfile(t)
	if from := instruction(lines, "FROM"); len(from) != 2 || !strings.HasPrefix(from[0], "golang:1.26") || !strings.HasSuffix(from[0], " AS build") {
		t.Errorf("FROM %q: want a golang:1.26 build stage and a final stage", from)
	}
	build := buildCommand(t, lines)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "-X main.commit=", "-X main.buildTime=", "./cmd/ship"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build command lacks %q: %s", want, build)
		}
	}
	for op, want := range map[string]string{
		"USER":       "10001:10001",
		"WORKDIR":    "/project",
		"VOLUME":     `["/project"]`,
		"EXPOSE":     "3000",
		"ENTRYPOINT": `["ship", "start"]`,
	} {
		// The last one is the final stage's.
		if got := instruction(lines, op); len(got) == 0 || got[len(got)-1] != want {
			t.Errorf("%s %q, want %s", op, got, want)
		}
	}
	env := strings.Join(instruction(lines, "ENV"), " ")
	if !strings.Contains(env, "SHIP_HOST=0.0.0.0") || !strings.Contains(env, "SHIP_PORT=3000") {
		t.Errorf("ENV %q: ship must listen on all addresses, on the exposed port", env)
	}
	if _, err := healthURL(lines, "3000"); err != nil {
		t.Error(err)
	}
	run := strings.Join(instruction(lines, "RUN"), " ")
	if !strings.Contains(run, "bubblewrap") || !strings.Contains(run, "ca-certificates") || !strings.Contains(run, "useradd --uid 10001") {
		t.Errorf("the final stage must install bubblewrap and CA certificates and add user 10001: %s", run)
	}
}
