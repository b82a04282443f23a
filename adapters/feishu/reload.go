package feishu

import "github.com/shipmyagent/ship/runtime/config"

// Reconfigure puts the settings of cfg that a running adapter can change
// in force for the next event (a configuration reload): the allowlists
// and streaming. Credentials, the domain, the mode and busyNote need a
// restart.
func (a *Adapter) Reconfigure(cfg config.Config) {
	fc := cfg.Adapters.Feishu
	a.allowC.Set(fc.AllowedChatIDs)
	a.allowU.Set(fc.AllowedUserIDs)
	if on, err := config.StreamingOn(fc.Streaming); err == nil { // Load checked it
		a.streaming.Store(on)
	}
}
