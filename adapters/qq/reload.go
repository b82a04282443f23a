package qq

import "github.com/shipmyagent/ship/runtime/config"

// Reconfigure puts the settings of cfg that a running adapter can change
// in force for the next event (a configuration reload): the allowlists
// and markdown. Credentials, the endpoints, the mode, the intents and
// busyNote need a restart.
func (a *Adapter) Reconfigure(cfg config.Config) {
	qc := cfg.Adapters.QQ
	a.allowC.Set(qc.AllowedChatIDs)
	a.allowU.Set(qc.AllowedUserIDs)
	a.markdown.Store(qc.Markdown)
}
