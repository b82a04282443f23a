package telegram

import "github.com/shipmyagent/ship/runtime/config"

// Reconfigure puts the settings of cfg that a running adapter can change
// in force for the next update (a configuration reload): the allowlists,
// requireMention and streaming. The token, the API base, the mode, the
// webhook, parseMode and busyNote need a restart.
func (a *Adapter) Reconfigure(cfg config.Config) {
	tc := cfg.Adapters.Telegram
	a.allowC.Set(tc.AllowedChatIDs)
	a.allowU.Set(tc.AllowedUserIDs)
	a.requireMention.Store(tc.RequireMention == nil || *tc.RequireMention)
	a.streaming.Store(tc.Streaming != "off")
}
