package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClusterConfig makes ship one replica of a group sharing a NATS JetStream
// (cluster.nats.url, or cluster.nats.embedded for an in-process server).
// Without either, ship runs alone as before.
type ClusterConfig struct {
	// Replica names this process in the group (status, leases, logs);
	// unique per replica. Default: the host name and server.port.
	Replica string `json:"replica,omitempty"`
	// Partitions is how many slices the queue's chats are hashed into;
	// each slice is run by one replica at a time. The same on every
	// replica: a chat hashed under two counts would run on two replicas,
	// so one with another count than the queue's items or a live
	// replica's refuses to start. Unset (0): the count the queue records,
	// 64 for a new queue, 16 for one made before ship recorded it (the
	// default then).
	Partitions int        `json:"partitions,omitempty"`
	NATS       NATSConfig `json:"nats"`
}

// NATSConfig says which NATS the replicas share.
type NATSConfig struct {
	// URL is an external NATS server or cluster ("nats://a:4222,nats://b:4222");
	// SHIP_NATS_URL overrides it.
	URL string `json:"url,omitempty"`
	// Embedded runs a NATS server inside ship instead.
	Embedded *EmbeddedNATS `json:"embedded,omitempty"`
	// Replicas is JetStream's copy count for ship's streams and buckets:
	// 3 survives the loss of one server. Default: with an embedded server
	// one per routed peer (itself included), at most 3; else 1.
	Replicas int `json:"replicas,omitempty"`
	// Token, when set (SHIP_NATS_TOKEN), authenticates ship to NATS; an
	// embedded server then requires it from clients.
	Token string `json:"token,omitempty"`
}

// EmbeddedNATS is the in-process NATS server of one replica.
type EmbeddedNATS struct {
	// Listen is the client address for other replicas' tools and
	// `ship export` ("127.0.0.1:4222"); empty: no client port.
	Listen string `json:"listen,omitempty"`
	// Cluster is the route address the peers connect to
	// ("0.0.0.0:6222"); needed to be routed.
	Cluster string `json:"cluster,omitempty"`
	// Routes are the peers' route URLs ("nats://10.0.0.2:6222").
	Routes []string `json:"routes,omitempty"`
	// StoreDir keeps JetStream's data (default .ship/nats).
	StoreDir string `json:"storeDir,omitempty"`
}

// On reports whether ship runs as a replica of a cluster.
func (c ClusterConfig) On() bool { return c.NATS.URL != "" || c.NATS.Embedded != nil }

// maxReplicaName keeps names usable as NATS server names and KV keys
// (with isName's characters).
const maxReplicaName = 64

func applyClusterEnv(cfg *Config, lookup LookupEnv) {
	if v, ok := lookup("SHIP_NATS_URL"); ok && v != "" {
		cfg.Cluster.NATS.URL = v
	}
	if v, ok := lookup("SHIP_NATS_TOKEN"); ok && v != "" {
		cfg.Cluster.NATS.Token = v
	}
	if v, ok := lookup("SHIP_REPLICA"); ok && v != "" {
		cfg.Cluster.Replica = v
	}
}

func (c *Config) clusterDefaults() {
	cl := &c.Cluster
	if !cl.On() {
		return
	}
	if cl.Replica == "" {
		host, _ := os.Hostname()
		host = strings.Map(func(r rune) rune {
			if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return r
			}
			return '-'
		}, host)
		if host == "" {
			host = "ship"
		}
		cl.Replica = host + "-" + strconv.Itoa(c.Server.Port)
	}
	if e := cl.NATS.Embedded; e != nil {
		if e.StoreDir == "" {
			e.StoreDir = c.StatePath("nats")
		} else if !filepath.IsAbs(e.StoreDir) {
			e.StoreDir = filepath.Join(c.Dir, e.StoreDir)
		}
		if cl.NATS.Replicas == 0 {
			cl.NATS.Replicas = min(3, 1+len(e.Routes))
		}
	}
	if cl.NATS.Replicas == 0 {
		cl.NATS.Replicas = 1
	}
}

func (c ClusterConfig) validate() error {
	if !c.On() {
		return nil
	}
	if c.NATS.URL != "" && c.NATS.Embedded != nil {
		return fmt.Errorf("%w: cluster.nats: set url (an external NATS) or embedded (a server inside ship), not both", ErrInvalid)
	}
	if !isName(c.Replica, maxReplicaName) {
		return fmt.Errorf("%w: cluster.replica (SHIP_REPLICA) %q must be 1-64 letters, digits, '-' or '_'", ErrInvalid, c.Replica)
	}
	if c.Partitions < 0 || c.Partitions > 1024 {
		return fmt.Errorf("%w: cluster.partitions %d must be between 1 and 1024 (or unset)", ErrInvalid, c.Partitions)
	}
	if c.NATS.Replicas < 1 || c.NATS.Replicas > 5 {
		return fmt.Errorf("%w: cluster.nats.replicas %d must be between 1 and 5", ErrInvalid, c.NATS.Replicas)
	}
	if c.NATS.URL != "" {
		for _, u := range strings.Split(c.NATS.URL, ",") {
			if p, err := url.Parse(strings.TrimSpace(u)); err != nil || p.Host == "" {
				return fmt.Errorf("%w: cluster.nats.url (SHIP_NATS_URL) has %q, which is not a URL like nats://host:4222", ErrInvalid, RedactNATSURL(u))
			}
		}
	}
	if e := c.NATS.Embedded; e != nil {
		for name, addr := range map[string]string{"listen": e.Listen, "cluster": e.Cluster} {
			if addr == "" {
				continue
			}
			if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
				return fmt.Errorf("%w: cluster.nats.embedded.%s %q must be host:port", ErrInvalid, name, addr)
			}
		}
		if len(e.Routes) > 0 && e.Cluster == "" {
			return fmt.Errorf("%w: cluster.nats.embedded.routes needs cluster.nats.embedded.cluster, the address this server's peers connect to", ErrInvalid)
		}
		for _, r := range e.Routes {
			if p, err := url.Parse(r); err != nil || p.Host == "" {
				return fmt.Errorf("%w: cluster.nats.embedded.routes has %q, which is not a URL like nats://host:6222", ErrInvalid, RedactNATSURL(r))
			}
		}
		if c.NATS.Replicas > 1+len(e.Routes) {
			return fmt.Errorf("%w: cluster.nats.replicas %d needs at least %d routed servers; this one has %d routes",
				ErrInvalid, c.NATS.Replicas, c.NATS.Replicas-1, len(e.Routes))
		}
	}
	return nil
}

// validateClusterWebhooks refuses a Telegram webhook without a fixed
// secret in cluster mode: every replica serves the webhook, and a secret
// made up at each start would be another per replica, so every replica but
// the last to call setWebhook would refuse Telegram's calls.
func (c Config) validateClusterWebhooks() error {
	tg := c.Adapters.Telegram
	if c.Cluster.On() && tg.On() && tg.Mode == "webhook" && tg.WebhookSecret == "" {
		return fmt.Errorf("%w: adapters.telegram.webhookSecret (TELEGRAM_WEBHOOK_SECRET) is required in cluster mode: "+
			"every replica takes Telegram's webhook calls and must check the same secret", ErrInvalid)
	}
	return nil
}

// RedactNATSURL shows NATS server URLs ("nats://a:4222,nats://b:4222")
// without their passwords or tokens, for errors and output.
func RedactNATSURL(servers string) string {
	parts := strings.Split(servers, ",")
	for i, s := range parts {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		switch {
		case err != nil:
			if at := strings.LastIndex(s, "@"); at >= 0 {
				s = "…@" + s[at+1:]
			}
		case u.User != nil:
			// A lone user part is how a token is put in a URL: hide it all.
			u.User = nil
			s = strings.Replace(u.String(), "://", "://…@", 1)
		}
		parts[i] = s
	}
	return strings.Join(parts, ",")
}

// isName reports whether s is 1 to max ASCII letters, digits, '_' or '-'.
// (A package-level regexp for this cost 30 KB of heap at every start:
// "{1,64}" compiles to 64 copies of the class.)
func isName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
