// Package config loads ship's configuration: ship.json in the project folder,
// a .env file beside it, and the environment. Environment variables win over
// ship.json, and a whole ship.json string "${VAR}" is taken from the
// environment, so secrets need never be written into ship.json.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/stt"
)

// File names in the project folder.
const (
	FileName    = "ship.json"
	AgentMDName = "Agent.md"
	EnvFileName = ".env"
	StateDir    = ".ship"
)

// Config is everything ship reads at start-up.
type Config struct {
	// Dir is the project folder; all state lives in Dir/.ship.
	Dir      string         `json:"-"`
	LLM      llm.Config     `json:"llm"`
	Server   ServerConfig   `json:"server"`
	Queue    QueueConfig    `json:"queue"`
	Store    StoreConfig    `json:"store"`
	History  HistoryConfig  `json:"history"`
	Log      LogConfig      `json:"log"`
	Adapters AdaptersConfig `json:"adapters"`
	// Tools is exec_shell's switch and the tool policy.
	Tools ToolsConfig `json:"tools"`
	// MCP lists the MCP servers; Skills adds skill folders.
	MCP    MCPConfig    `json:"mcp"`
	Skills SkillsConfig `json:"skills"`
	// STT transcribes voice notes (off until configured); Files bounds
	// the files people send.
	STT   stt.Config  `json:"stt"`
	Files FilesConfig `json:"files"`
	// Cluster makes ship one replica of a group over NATS JetStream.
	Cluster ClusterConfig `json:"cluster"`
	// Memory is the long-term notes.
	Memory MemoryConfig `json:"memory"`
	// Limits are the daily token budgets.
	Limits LimitsConfig `json:"limits"`
	// Metrics are the Prometheus metrics at /metrics.
	Metrics MetricsConfig `json:"metrics"`
	// Shutdown is how SIGTERM drains (shutdown.go).
	Shutdown ShutdownConfig `json:"shutdown"`
	// Agents are the agent profiles (prompt, model, tool narrowing, bound
	// chats), by name.
	Agents map[string]AgentConfig `json:"agents,omitempty"`

	// lookup is how this configuration read the environment (and .env):
	// a reload of ship.json expands "${VAR}" the same way.
	lookup LookupEnv
	// clusterWritten says ship.json has a cluster section, whatever it
	// holds: one without NATS settings is an error, not a single process.
	clusterWritten bool
	// adaptersWritten names the adapters sections ship.json has
	// (credentials.go).
	adaptersWritten map[string]bool
}

// ServerConfig is the HTTP API.
type ServerConfig struct {
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Token is the API's bearer token (SHIP_API_TOKEN); its holder acts as
	// api:token in the tool policy.
	Token string `json:"token,omitempty"`
	// Tokens are more bearer tokens, each acting as its own identity.
	Tokens []NamedToken `json:"tokens,omitempty"`
	// CORSOrigins may call the API from a browser ("*" for any); none by
	// default.
	CORSOrigins []string `json:"corsOrigins,omitempty"`
	// Console serves the web console at / (default true).
	Console *bool `json:"console,omitempty"`
	// ConsoleRole is the tool-policy role the console's user acts as when
	// answering approvals; none means the console shows approvals but
	// cannot decide them.
	ConsoleRole string `json:"consoleRole,omitempty"`
}

// ConsoleOn reports whether the web console is served.
func (s ServerConfig) ConsoleOn() bool { return s.Console == nil || *s.Console }

// QueueConfig is the global QueryQueue.
type QueueConfig struct {
	Capacity          int `json:"capacity,omitempty"`
	Concurrency       int `json:"concurrency,omitempty"`
	RunTimeoutSeconds int `json:"runTimeoutSeconds,omitempty"`
	// SenderPerMinute and SenderBurst are the per-sender limit: messages
	// one sender may send in one chat per minute, and at once (0 → 20 and
	// 10). One member of a group, or one API caller, cannot starve the
	// rest; a trusted back end sending for many users may raise them.
	SenderPerMinute int `json:"senderPerMinute,omitempty"`
	SenderBurst     int `json:"senderBurst,omitempty"`
}

// maxSenderLimit bounds the per-sender settings: past it the limit is off
// in all but name.
const maxSenderLimit = 1_000_000

// StoreConfig is the ChatStore.
type StoreConfig struct {
	Durability   string `json:"durability,omitempty"` // always | none
	SegmentBytes int64  `json:"segmentBytes,omitempty"`
}

// HistoryConfig bounds the in-memory history.
type HistoryConfig struct {
	MaxChats    int `json:"maxChats,omitempty"`
	MaxMessages int `json:"maxMessages,omitempty"`
	MaxChars    int `json:"maxChars,omitempty"`
	// SummaryModel names the model of llm.models that summarises a chat's
	// oldest turns once its history passes the limits (a cheaper one will
	// do); "" is the default model.
	SummaryModel string `json:"summaryModel,omitempty"`
}

// LogConfig is logging.
type LogConfig struct {
	Level string `json:"level,omitempty"`
	File  bool   `json:"file,omitempty"` // also write JSON logs to .ship/logs
}

// AdaptersConfig holds each platform's section.
type AdaptersConfig struct {
	Telegram TelegramConfig `json:"telegram"`
	Feishu   FeishuConfig   `json:"feishu"`
	QQ       QQConfig       `json:"qq"`
}

// TelegramConfig is the Telegram adapter.
type TelegramConfig struct {
	Enabled  *bool  `json:"enabled,omitempty"`
	BotToken string `json:"botToken,omitempty"`
	APIBase  string `json:"apiBase,omitempty"`
	// Mode is "polling" (default: no public address needed) or "webhook".
	Mode string `json:"mode,omitempty"`
	// WebhookURL is the public https base URL Telegram posts to, e.g.
	// https://bot.example.com (ship serves POST /webhook/telegram on it).
	WebhookURL string `json:"webhookUrl,omitempty"`
	// WebhookSecret is checked on every webhook request; empty means a new
	// random one at each start (setWebhook tells Telegram). Cluster mode
	// needs it set: every replica checks the same one.
	WebhookSecret string `json:"webhookSecret,omitempty"`
	// RequireMention (default true): in groups, answer only when mentioned,
	// replied to, or sent a /command.
	RequireMention *bool   `json:"requireMention,omitempty"`
	AllowedChatIDs []int64 `json:"allowedChatIds,omitempty"`
	AllowedUserIDs []int64 `json:"allowedUserIds,omitempty"`
	// BusyNote (default true): tell a chat when its message waits in line.
	BusyNote *bool `json:"busyNote,omitempty"`
	// ParseMode is "" (plain text, default), "HTML", "MarkdownV2" or
	// "Markdown"; a part Telegram cannot parse is resent as plain text.
	ParseMode string `json:"parseMode,omitempty"`
	// Streaming is "auto" (default: replies appear while the model writes
	// them, where the platform can show that) or "off" (each reply whole).
	Streaming string `json:"streaming,omitempty"`
}

// FeishuConfig is the Feishu/Lark adapter.
type FeishuConfig struct {
	Enabled   *bool  `json:"enabled,omitempty"`
	AppID     string `json:"appId,omitempty"`
	AppSecret string `json:"appSecret,omitempty"`
	// Domain is "feishu" (default), "lark" or a base URL; it serves both the
	// open API and the websocket endpoint.
	Domain string `json:"domain,omitempty"`
	// Mode is "websocket" (default: no public address needed) or "webhook".
	Mode              string `json:"mode,omitempty"`
	VerificationToken string `json:"verificationToken,omitempty"`
	// EncryptKey is required in webhook mode: without it Feishu's events
	// are neither signed nor encrypted.
	EncryptKey string `json:"encryptKey,omitempty"`
	BusyNote   *bool  `json:"busyNote,omitempty"`
	// AllowedChatIDs, when set, are the only chats answered or logged:
	// Feishu chat_ids (oc_…), p2p chats included.
	AllowedChatIDs []string `json:"allowedChatIds,omitempty"`
	// AllowedUserIDs, when set, are the only senders answered or logged:
	// the sender's open_id (ou_…) under this app.
	AllowedUserIDs []string `json:"allowedUserIds,omitempty"`
	// Streaming is "auto" (default: replies appear while the model writes
	// them, where the platform can show that) or "off" (each reply whole).
	Streaming string `json:"streaming,omitempty"`
}

// QQConfig is the QQ adapter.
type QQConfig struct {
	Enabled   *bool  `json:"enabled,omitempty"`
	AppID     string `json:"appId,omitempty"`
	AppSecret string `json:"appSecret,omitempty"`
	Sandbox   bool   `json:"sandbox,omitempty"`
	APIBase   string `json:"apiBase,omitempty"`
	TokenBase string `json:"tokenBase,omitempty"`
	// Mode is "websocket" (default) or "webhook".
	Mode string `json:"mode,omitempty"`
	// WebhookSecret is the key QQ signs webhook calls with (default: the
	// app secret).
	WebhookSecret string `json:"webhookSecret,omitempty"`
	// Intents is the gateway intents bit mask (default: groups and C2C,
	// guild @ messages, guild DMs).
	Intents  int   `json:"intents,omitempty"`
	BusyNote *bool `json:"busyNote,omitempty"`
	// AllowedChatIDs, when set, are the only chats answered or logged: a
	// group's group_openid, a guild channel's channel id, a guild DM's
	// guild id, or for a C2C chat the user's user_openid.
	AllowedChatIDs []string `json:"allowedChatIds,omitempty"`
	// AllowedUserIDs, when set, are the only authors answered or logged:
	// the author's member_openid in groups, user_openid in C2C chats, or
	// user id in guilds.
	AllowedUserIDs []string `json:"allowedUserIds,omitempty"`
	// Streaming is accepted for symmetry; QQ has no way to show a reply
	// while it is written, so each reply goes whole either way.
	Streaming string `json:"streaming,omitempty"`
	// Markdown sends replies as QQ markdown messages (msg_type 2), for a
	// bot QQ granted the native Markdown permission; without it (the
	// default) replies are the Markdown rendered as clean plain text. A
	// bot without the permission falls back to plain text, with a warning.
	Markdown bool `json:"markdown,omitempty"`
}

// On reports whether an adapter runs: it has credentials and ship.json does
// not switch it off.
func (t TelegramConfig) On() bool { return t.BotToken != "" && (t.Enabled == nil || *t.Enabled) }

// On reports whether the Feishu adapter runs.
func (f FeishuConfig) On() bool {
	return f.AppID != "" && f.AppSecret != "" && (f.Enabled == nil || *f.Enabled)
}

// On reports whether the QQ adapter runs.
func (q QQConfig) On() bool {
	return q.AppID != "" && q.AppSecret != "" && (q.Enabled == nil || *q.Enabled)
}

// Defaults.
const (
	DefaultHost          = "127.0.0.1"
	DefaultPort          = 3000
	DefaultQueueCapacity = 1000
	DefaultRunTimeout    = 10 * time.Minute
)

// ErrInvalid wraps every configuration error, each of which names the
// setting and how to fix it.
var ErrInvalid = errors.New("invalid configuration")

// LookupEnv is how Load reads the environment (os.LookupEnv in production).
type LookupEnv func(key string) (string, bool)

// Load reads dir/ship.json (optional), dir/.env (optional) and the
// environment. Values of .env apply only where the real environment has
// none.
func Load(dir string, env LookupEnv) (Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Config{}, fmt.Errorf("resolving project folder: %w", err)
	}
	dotenv, err := readDotEnv(filepath.Join(abs, EnvFileName))
	if err != nil {
		return Config{}, err
	}
	lookup := func(k string) (string, bool) {
		if v, ok := env(k); ok {
			return v, true
		}
		v, ok := dotenv[k]
		return v, ok
	}

	cfg := Config{Dir: abs, lookup: lookup}
	raw, err := os.ReadFile(filepath.Join(abs, FileName))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return Config{}, fmt.Errorf("reading %s: %w", FileName, err)
	default:
		if err := decodeFile(raw, lookup, &cfg); err != nil {
			return Config{}, err
		}
	}
	if err := applyEnv(&cfg, lookup); err != nil {
		return Config{}, err
	}
	cfg.applyDefaults()
	return cfg, cfg.validate()
}

func decodeFile(raw []byte, lookup LookupEnv, cfg *Config) error {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return fmt.Errorf("%w: %s is not valid JSON: %v", ErrInvalid, FileName, err)
	}
	if m, ok := tree.(map[string]any); ok {
		_, cfg.clusterWritten = m["cluster"]
		cfg.noteAdapters(m)
	}
	if err := checkSettings(tree); err != nil {
		return err
	}
	expanded, err := json.Marshal(expand(tree, lookup))
	if err != nil {
		return fmt.Errorf("expanding %s: %w", FileName, err)
	}
	dec := json.NewDecoder(bytes.NewReader(expanded))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, FileName, err)
	}
	return nil
}

// expand replaces every string that is exactly "${VAR}" with the variable's
// value ("" when unset). Partial matches stay as written, so a literal "$"
// in a prompt or URL is never mangled.
func expand(v any, lookup LookupEnv) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = expand(x, lookup)
		}
	case []any:
		for i, x := range v {
			v[i] = expand(x, lookup)
		}
	case string:
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && len(v) > 3 {
			val, _ := lookup(v[2 : len(v)-1])
			return val
		}
	}
	return v
}

// applyEnv lets environment variables override ship.json.
func applyEnv(cfg *Config, lookup LookupEnv) error {
	str := func(key string, dst *string) {
		if v, ok := lookup(key); ok && v != "" {
			*dst = v
		}
	}
	str("LLM_PROVIDER", &cfg.LLM.Provider)
	str("LLM_MODEL", &cfg.LLM.Model)
	str("LLM_BASE_URL", &cfg.LLM.BaseURL)
	str("LLM_API_KEY", &cfg.LLM.APIKey)
	str("SHIP_HOST", &cfg.Server.Host)
	str("SHIP_API_TOKEN", &cfg.Server.Token)
	str("SHIP_LOG_LEVEL", &cfg.Log.Level)
	str("TELEGRAM_BOT_TOKEN", &cfg.Adapters.Telegram.BotToken)
	str("TELEGRAM_API_BASE", &cfg.Adapters.Telegram.APIBase)
	str("TELEGRAM_MODE", &cfg.Adapters.Telegram.Mode)
	str("TELEGRAM_WEBHOOK_URL", &cfg.Adapters.Telegram.WebhookURL)
	str("TELEGRAM_WEBHOOK_SECRET", &cfg.Adapters.Telegram.WebhookSecret)
	str("FEISHU_APP_ID", &cfg.Adapters.Feishu.AppID)
	str("FEISHU_APP_SECRET", &cfg.Adapters.Feishu.AppSecret)
	str("FEISHU_DOMAIN", &cfg.Adapters.Feishu.Domain)
	str("FEISHU_MODE", &cfg.Adapters.Feishu.Mode)
	str("FEISHU_ENCRYPT_KEY", &cfg.Adapters.Feishu.EncryptKey)
	str("FEISHU_VERIFICATION_TOKEN", &cfg.Adapters.Feishu.VerificationToken)
	str("QQ_APP_ID", &cfg.Adapters.QQ.AppID)
	str("QQ_APP_SECRET", &cfg.Adapters.QQ.AppSecret)
	str("QQ_API_BASE", &cfg.Adapters.QQ.APIBase)
	str("QQ_TOKEN_BASE", &cfg.Adapters.QQ.TokenBase)
	str("QQ_MODE", &cfg.Adapters.QQ.Mode)
	str("QQ_WEBHOOK_SECRET", &cfg.Adapters.QQ.WebhookSecret)
	applyMediaEnv(cfg, lookup)
	applyClusterEnv(cfg, lookup)
	if v, ok := lookup("SHIP_PORT"); ok && v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("%w: SHIP_PORT=%q is not a port number (0-65535)", ErrInvalid, v)
		}
		cfg.Server.Port = p
	}
	if err := applyLLMEnv(cfg, lookup); err != nil {
		return err
	}
	if v, ok := lookup("QQ_SANDBOX"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: QQ_SANDBOX=%q must be true or false", ErrInvalid, v)
		}
		cfg.Adapters.QQ.Sandbox = b
	}
	if v, ok := lookup("QQ_MARKDOWN"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%w: QQ_MARKDOWN=%q must be true or false", ErrInvalid, v)
		}
		cfg.Adapters.QQ.Markdown = b
	}
	// A provider implied by a key alone is the common case: LLM_API_KEY
	// without LLM_PROVIDER means OpenAI (or the compatible LLM_BASE_URL).
	if cfg.LLM.Provider == "" && cfg.LLM.APIKey != "" {
		cfg.LLM.Provider = llm.ProviderOpenAI
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Server.Host == "" {
		c.Server.Host = DefaultHost
	}
	if c.Server.Port == 0 {
		c.Server.Port = DefaultPort
	}
	if c.Queue.Capacity <= 0 {
		c.Queue.Capacity = DefaultQueueCapacity
	}
	if c.Queue.Concurrency <= 0 {
		c.Queue.Concurrency = 1
	}
	if c.Queue.RunTimeoutSeconds <= 0 {
		c.Queue.RunTimeoutSeconds = int(DefaultRunTimeout / time.Second)
	}
	if c.Store.Durability == "" {
		c.Store.Durability = "always"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	c.LLM = c.LLM.Normalized()
	c.clusterDefaults()
}

func (c *Config) validate() error {
	switch c.Store.Durability {
	case "always", "none":
	default:
		return fmt.Errorf("%w: store.durability %q must be \"always\" or \"none\"", ErrInvalid, c.Store.Durability)
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%w: SHIP_LOG_LEVEL %q must be debug, info, warn or error", ErrInvalid, c.Log.Level)
	}
	switch c.Adapters.Telegram.Mode {
	case "", "polling":
	case "webhook":
		if c.Adapters.Telegram.On() && !strings.HasPrefix(c.Adapters.Telegram.WebhookURL, "https://") && !strings.HasPrefix(c.Adapters.Telegram.WebhookURL, "http://") {
			return fmt.Errorf("%w: Telegram webhook mode needs TELEGRAM_WEBHOOK_URL (adapters.telegram.webhookUrl), the public https URL of this server", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: adapters.telegram.mode %q must be \"polling\" or \"webhook\"", ErrInvalid, c.Adapters.Telegram.Mode)
	}
	switch c.Adapters.Telegram.ParseMode {
	case "", "HTML", "MarkdownV2", "Markdown":
	default:
		return fmt.Errorf("%w: adapters.telegram.parseMode %q must be HTML, MarkdownV2, Markdown or empty", ErrInvalid, c.Adapters.Telegram.ParseMode)
	}
	for name, mode := range map[string]string{"telegram": c.Adapters.Telegram.Streaming,
		"feishu": c.Adapters.Feishu.Streaming, "qq": c.Adapters.QQ.Streaming} {
		if _, err := StreamingOn(mode); err != nil {
			return fmt.Errorf("%w: adapters.%s.streaming: %w", ErrInvalid, name, err)
		}
	}
	if c.LLM.MaxTokens < 1 || c.LLM.MaxTokens > llm.MaxMaxTokens {
		return fmt.Errorf("%w: llm.maxTokens (LLM_MAX_TOKENS) is %d; it must be between 1 and %d (default %d)",
			ErrInvalid, c.LLM.MaxTokens, llm.MaxMaxTokens, llm.DefaultMaxTokens)
	}
	// The sections' checks, in order; the first refusal is the answer.
	// They only read c (the value receivers are copies taken here).
	policy := func() error { _, err := c.ToolPolicy(); return err }
	profiles := func() error { _, err := c.Profiles(); return err }
	for _, check := range []func() error{c.Server.validate, c.Metrics.validate, c.validateModels, c.validateMedia,
		c.Limits.validate, c.Skills.validate, c.Memory.validate, c.Shutdown.validate, c.Tools.Jobs.validate,
		c.Tools.Agents.validate, c.Tools.Exec.validate, policy, c.MCP.Validate, profiles} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.clusterWritten && !c.Cluster.On() {
		return fmt.Errorf("%w: ship.json has a cluster section but no NATS to share: set cluster.nats.url "+
			"(or SHIP_NATS_URL) for an external NATS, or cluster.nats.embedded for a server inside ship; "+
			"remove the section to run as a single process", ErrInvalid)
	}
	if err := c.Cluster.validate(); err != nil {
		return err
	}
	if err := c.validateClusterWebhooks(); err != nil {
		return err
	}
	if c.Queue.Concurrency > 64 {
		return fmt.Errorf("%w: queue.concurrency %d is above 64", ErrInvalid, c.Queue.Concurrency)
	}
	if q := c.Queue; q.SenderPerMinute < 0 || q.SenderPerMinute > maxSenderLimit || q.SenderBurst < 0 || q.SenderBurst > maxSenderLimit {
		return fmt.Errorf("%w: queue.senderPerMinute and queue.senderBurst must be between 1 and %d (0 or absent: 20 and 10)", ErrInvalid, maxSenderLimit)
	}
	return nil
}

// RunTimeout is the per-item run timeout.
func (c Config) RunTimeout() time.Duration {
	return time.Duration(c.Queue.RunTimeoutSeconds) * time.Second
}

// StatePath joins parts under the project's .ship folder.
func (c Config) StatePath(parts ...string) string {
	return filepath.Join(append([]string{c.Dir, StateDir}, parts...)...)
}

// AgentMDPath is the operator's instructions file.
func (c Config) AgentMDPath() string { return filepath.Join(c.Dir, AgentMDName) }

// StreamingOn reads a platform's streaming setting: "" and "auto" are on,
// "off" is off.
func StreamingOn(mode string) (bool, error) {
	switch mode {
	case "", "auto":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q must be \"auto\" or \"off\"", mode)
}
