package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

func noEnv(string) (string, bool) { return "", false }

// A mistyped setting is one line with its section, the nearest known name
// and where it is documented; nothing is loaded.
func TestUnknownSettingNamesSectionAndNearestName(t *testing.T) {
	cases := map[string]string{
		`{"queue": {"capcity": 5}}`:                    `ship.json: queue: unknown field "capcity" — did you mean "capacity"? (see docs/configuration.md#configuration)`,
		`{"qeueu": {}}`:                                `ship.json: unknown section "qeueu" — did you mean "queue"? (see docs/configuration.md#where-the-other-settings-are)`,
		`{"adapters": {"telegram": {"botTokn": "x"}}}`: `ship.json: adapters.telegram: unknown field "botTokn" — did you mean "botToken"? (see docs/platforms.md#platforms)`,
		`{"agents": {"helper": {"promt": "x"}}}`:       `ship.json: agents.helper: unknown field "promt" — did you mean "prompt"?`,
		`{"server": {"tokens": [{"nmae": "a"}]}}`:      `ship.json: server.tokens[0]: unknown field "nmae" — did you mean "name"?`,
		// Nothing close: the known names instead of a guess.
		`{"log": {"zzzzzz": 1}}`: `ship.json: log: unknown field "zzzzzz" — known: file, level`,
	}
	for file, want := range cases {
		dir := t.TempDir()
		write(t, dir, FileName, file)
		_, err := Load(dir, noEnv)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", file, err, want)
		}
	}
}

// encoding/json matches names regardless of case, and so does the check:
// what loaded before still loads.
func TestSettingNamesMatchRegardlessOfCase(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"Queue": {"Capacity": 7}, "tools": {"roles": {"ops": {"members": []}}}}`)
	cfg, err := Load(dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Queue.Capacity != 7 {
		t.Errorf("queue.capacity = %d, want 7", cfg.Queue.Capacity)
	}
}

// Negative counts used to start silently with the defaults.
func TestNegativeNumbersAreRefusedByName(t *testing.T) {
	cases := map[string]string{
		`{"queue": {"capacity": -1}}`:                   "queue.capacity is -1; it cannot be negative",
		`{"queue": {"capacity": 5, "concurrency": -3}}`: "queue.concurrency is -3; it cannot be negative",
		`{"history": {"maxMessages": -10}}`:             "history.maxMessages is -10",
	}
	for file, want := range cases {
		dir := t.TempDir()
		write(t, dir, FileName, file)
		_, err := Load(dir, noEnv)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", file, err, want)
		}
	}
}

// `ship init --telegram` without TELEGRAM_BOT_TOKEN: the platform is set up
// but cannot run.
func TestMissingCredentials(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"adapters": {
	  "telegram": {"botToken": "${TELEGRAM_BOT_TOKEN}"},
	  "feishu": {"appId": "${FEISHU_APP_ID}", "appSecret": "${FEISHU_APP_SECRET}"},
	  "qq": {"appId": "1", "appSecret": "${QQ_APP_SECRET}", "enabled": false}}}`)
	env := func(k string) (string, bool) {
		if k == "FEISHU_APP_ID" {
			return "cli_a", true
		}
		return "", false
	}
	cfg, err := Load(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.MissingCredentials()
	if len(got) != 2 {
		t.Fatalf("missing = %+v, want telegram and feishu (qq is switched off)", got)
	}
	if want := "ship.json sets up Telegram (adapters.telegram) but TELEGRAM_BOT_TOKEN is not set"; got[0].Error() != want {
		t.Errorf("telegram: %q, want %q", got[0].Error(), want)
	}
	if want := "put TELEGRAM_BOT_TOKEN in .env (or the environment), or set adapters.telegram.enabled to false"; got[0].Fix() != want {
		t.Errorf("telegram fix: %q", got[0].Fix())
	}
	if got[1].Platform != "feishu" || strings.Join(got[1].Vars, ",") != "FEISHU_APP_SECRET" {
		t.Errorf("feishu: %+v", got[1])
	}

	// With the token set (here from .env) nothing is missing.
	write(t, dir, EnvFileName, "TELEGRAM_BOT_TOKEN=1:abc\nFEISHU_APP_SECRET=s\n")
	if cfg, err = Load(dir, env); err != nil {
		t.Fatal(err)
	}
	if m := cfg.MissingCredentials(); len(m) != 0 {
		t.Errorf("missing with credentials set: %+v", m)
	}
}

func TestEditDistanceCountsSwapsAsOne(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"modle", "model", 1}, {"capcity", "capacity", 1}, {"", "abc", 3}, {"same", "same", 0}, {"kitten", "sitting", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}

// Every section's pointer leads to a heading that exists in docs/, and
// every section of Config has one.
func TestEverySectionPointsAtItsDocs(t *testing.T) {
	heading := regexp.MustCompile(`(?m)^#{1,6} +(.+?)\s*$`)
	for name := range jsonFields(reflect.TypeFor[Config]()) {
		doc := docsFor(name)
		if _, ok := sectionDocs[name]; !ok {
			t.Errorf("section %q has no page in sectionDocs", name)
		}
		file, anchor, _ := strings.Cut(doc, "#")
		raw, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		found := false
		for _, m := range heading.FindAllStringSubmatch(string(raw), -1) {
			if slug(m[1]) == anchor {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: %s has no heading #%s", name, file, anchor)
		}
	}
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces as dashes.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
