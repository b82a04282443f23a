package telegram

import "github.com/shipmyagent/ship/runtime/config"

// Reconfigure puts the settings of cfg that a running adapter can change
// in force for the next update (a configuration reload): the allowlists,
// requireMention and streaming. The token, the API base, the mode, the
// webhook, parseMode and busyNote need a restart.
func (a *Adapter) Reconfigure(cfg config.Config) {
	o := optionsFrom(cfg)
	a.allowC.Set(o.AllowedChatIDs)
	a.allowU.Set(o.AllowedUserIDs)
	a.requireMention.Store(o.RequireMention)
	a.streaming.Store(o.Streaming)
}
