package config

import "fmt"

// MissingCredential is a platform ship.json sets up (its adapters section
// is there and not "enabled": false) whose credentials are not set, as
// after `ship init --telegram` without TELEGRAM_BOT_TOKEN.
type MissingCredential struct {
	// Platform is "telegram", "feishu" or "qq".
	Platform string
	// Vars are the environment variables that are not set.
	Vars []string
}

// Setting is the ship.json section, e.g. "adapters.telegram".
func (m MissingCredential) Setting() string { return "adapters." + m.Platform }

// Error is the one line that says what is missing.
func (m MissingCredential) Error() string {
	return fmt.Sprintf("ship.json sets up %s (%s) but %s %s not set",
		platformTitle(m.Platform), m.Setting(), and(m.Vars), plural(len(m.Vars), "is", "are"))
}

// Fix is the one line that says how to fix it.
func (m MissingCredential) Fix() string {
	return fmt.Sprintf("put %s in .env (or the environment), or set %s.enabled to false",
		and(m.Vars), m.Setting())
}

// MissingCredentials lists the platforms ship.json sets up without their
// credentials. Such a platform does not run: ship start refuses rather
// than serve without it unnoticed.
func (c Config) MissingCredentials() []MissingCredential {
	a := c.Adapters
	off := func(b *bool) bool { return b != nil && !*b }
	var out []MissingCredential
	if c.adaptersWritten["telegram"] && !off(a.Telegram.Enabled) && a.Telegram.BotToken == "" {
		out = append(out, MissingCredential{Platform: "telegram", Vars: []string{"TELEGRAM_BOT_TOKEN"}})
	}
	pair := func(name, id, secret, idVar, secretVar string, enabled *bool) {
		if !c.adaptersWritten[name] || off(enabled) {
			return
		}
		var vars []string
		if id == "" {
			vars = append(vars, idVar)
		}
		if secret == "" {
			vars = append(vars, secretVar)
		}
		if len(vars) > 0 {
			out = append(out, MissingCredential{Platform: name, Vars: vars})
		}
	}
	pair("feishu", a.Feishu.AppID, a.Feishu.AppSecret, "FEISHU_APP_ID", "FEISHU_APP_SECRET", a.Feishu.Enabled)
	pair("qq", a.QQ.AppID, a.QQ.AppSecret, "QQ_APP_ID", "QQ_APP_SECRET", a.QQ.Enabled)
	return out
}

// noteAdapters records which adapters sections ship.json has.
func (c *Config) noteAdapters(tree map[string]any) {
	sections, _ := tree["adapters"].(map[string]any)
	for name := range sections {
		if c.adaptersWritten == nil {
			c.adaptersWritten = map[string]bool{}
		}
		c.adaptersWritten[name] = true
	}
}

func platformTitle(p string) string {
	switch p {
	case "telegram":
		return "Telegram"
	case "feishu":
		return "Feishu/Lark"
	case "qq":
		return "QQ"
	}
	return p
}

func and(list []string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	return fmt.Sprintf("%s and %s", list[0], list[1])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
