package deploy_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/shipmyagent/ship/runtime/config"
)

// natsToken stands in for nats.env's SHIP_NATS_TOKEN.
const natsToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The three NATS configurations, read by nats-server's own parser (the
// version ship embeds): three servers of one cluster, each with JetStream,
// routes to all three, and the token ship's replicas present.
func TestNATSConfigsFormOneJetStreamCluster(t *testing.T) {
	t.Setenv("SHIP_NATS_TOKEN", natsToken)
	c := readCompose(t, "cluster/compose.yml")
	names := map[string]bool{}
	for i, node := range []string{"n1", "n2", "n3"} {
		svc, ok := c.Services[node]
		if !ok {
			t.Fatalf("no service %s", node)
		}
		conf := ""
		for _, v := range svc.Volumes {
			if src, dst, _ := strings.Cut(v, ":"); strings.HasPrefix(dst, "/etc/nats/nats.conf") {
				conf = filepath.Join("cluster", src)
			}
		}
		if conf != filepath.Join("cluster", "nats-"+string(rune('1'+i))+".conf") || !slices.Equal(svc.Command, []string{"-c", "/etc/nats/nats.conf"}) {
			t.Errorf("%s mounts %q and runs %q", node, conf, svc.Command)
		}
		if !slices.Contains(svc.EnvFile, "nats.env") || !hasVolume(svc, "/data") {
			t.Errorf("%s: env_file %v, volumes %v: want the token from nats.env and a volume for /data", node, svc.EnvFile, svc.Volumes)
		}
		opts, err := server.ProcessConfigFile(conf)
		if err != nil {
			t.Fatalf("%s: %v", conf, err)
		}
		if names[opts.ServerName] || opts.ServerName != node {
			t.Errorf("%s: server_name %q; want %s, unique", conf, opts.ServerName, node)
		}
		names[opts.ServerName] = true
		if !opts.JetStream || opts.StoreDir != "/data/jetstream" {
			t.Errorf("%s: jetstream %v in %q; want it on, in the /data volume", conf, opts.JetStream, opts.StoreDir)
		}
		if opts.Cluster.Name != "ship" || opts.Cluster.Port != 6222 || opts.Port != 4222 || opts.HTTPPort != 8222 {
			t.Errorf("%s: cluster %q port %d, client port %d, monitor %d", conf, opts.Cluster.Name, opts.Cluster.Port, opts.Port, opts.HTTPPort)
		}
		var routes []string
		for _, r := range opts.Routes {
			routes = append(routes, r.Host)
		}
		if !slices.Equal(routes, []string{"n1:6222", "n2:6222", "n3:6222"}) {
			t.Errorf("%s: routes %v; want all three servers", conf, routes)
		}
		if opts.Authorization != natsToken {
			t.Errorf("%s: clients are not required to present SHIP_NATS_TOKEN", conf)
		}
		if h := strings.Join(svc.Healthcheck.Test, " "); !strings.Contains(h, "http://127.0.0.1:8222/healthz") {
			t.Errorf("%s healthcheck %q: want the monitoring port's /healthz", node, h)
		}
	}
}

// The replicas: each reaches all three NATS servers on their client port,
// has its own name and project volume, and the shared ship.json, loaded by
// ship's own config reader with the environment the container has, makes a
// valid replica keeping three copies of everything.
func TestClusterReplicasAreValidShipConfigs(t *testing.T) {
	c := readCompose(t, "cluster/compose.yml")
	shipJSON, err := os.ReadFile("cluster/ship.json")
	if err != nil {
		t.Fatal(err)
	}
	replicas := map[string]bool{}
	for _, name := range []string{"ship1", "ship2", "ship3"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if s.Build["context"] != "../.." || !s.Init || !s.ReadOnly || s.Restart == "" || !hasVolume(s, "/project") ||
			!slices.Contains(s.Volumes, "./ship.json:/project/ship.json:ro") || !slices.Contains(s.Volumes, "./Agent.md:/project/Agent.md:ro") {
			t.Errorf("%s: %+v", name, s)
		}
		for _, n := range []string{"n1", "n2", "n3"} {
			if s.DependsOn[n]["condition"] != "service_healthy" {
				t.Errorf("%s does not wait for %s to be healthy", name, n)
			}
		}
		if !slices.Equal(s.EnvFile, []string{"ship.env", "nats.env"}) {
			t.Errorf("%s env_file %v", name, s.EnvFile)
		}
		checkHealth(t, name, s.Healthcheck.Test, "http://127.0.0.1:3000/health")
		var hosts []string
		for _, u := range strings.Split(s.Environment["SHIP_NATS_URL"], ",") {
			pu, err := url.Parse(u)
			if err != nil || pu.Scheme != "nats" || pu.Port() != "4222" {
				t.Errorf("%s: SHIP_NATS_URL has %q", name, u)
				continue
			}
			hosts = append(hosts, pu.Hostname())
		}
		slices.Sort(hosts)
		if !slices.Equal(hosts, []string{"n1", "n2", "n3"}) {
			t.Errorf("%s reaches %v; want every NATS server, so it fails over", name, hosts)
		}
		keys := make([]string, 0, len(s.Environment))
		for k := range s.Environment {
			keys = append(keys, k)
		}
		reads := shipReads(t, keys)
		for _, k := range keys {
			if !reads[k] {
				t.Errorf("%s sets %s, which ship does not read", name, k)
			}
		}

		// The environment of the container: the image's, the compose
		// file's, and the env files' secrets.
		env := map[string]string{
			"SHIP_HOST": "0.0.0.0", "SHIP_PORT": "3000", "SHIP_NATS_TOKEN": natsToken,
			"SHIP_API_TOKEN": strings.Repeat("ab", 32), "LLM_PROVIDER": "offline",
		}
		for k, v := range s.Environment {
			env[k] = v
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, config.FileName), shipJSON, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(dir, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			t.Fatalf("%s: ship refuses the configuration: %v", name, err)
		}
		cl := cfg.Cluster
		if !cl.On() || cl.NATS.Replicas != 3 || cl.Partitions != 64 || cl.NATS.Token != natsToken || replicas[cl.Replica] || cl.Replica == "" {
			t.Errorf("%s: cluster %+v; want a replica of its own name, three copies, 64 partitions, the token", name, cl)
		}
		replicas[cl.Replica] = true
		if cfg.Server.Host != "0.0.0.0" || cfg.Server.Port != 3000 {
			t.Errorf("%s listens on %s:%d", name, cfg.Server.Host, cfg.Server.Port)
		}
	}
}
