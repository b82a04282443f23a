package models

import "fmt"

// Who may switch a chat's model with /model (llm.switch in ship.json).
const (
	// SwitchPrivate (the default): anyone in a private chat (it is theirs
	// alone), only approvers in a group (the model changes for everyone).
	SwitchPrivate = "private"
	// SwitchApprovers: only members of a role with "approve": true.
	SwitchApprovers = "approvers"
	// SwitchAnyone: anyone who may write to the bot.
	SwitchAnyone = "anyone"
	// SwitchOff: nobody; /model only lists the models.
	SwitchOff = "off"
)

// ParseSwitch checks an llm.switch setting; "" is SwitchPrivate.
func ParseSwitch(s string) (string, error) {
	switch s {
	case "":
		return SwitchPrivate, nil
	case SwitchPrivate, SwitchApprovers, SwitchAnyone, SwitchOff:
		return s, nil
	}
	return "", fmt.Errorf("%q must be %q (the default), %q, %q or %q", s, SwitchPrivate, SwitchApprovers, SwitchAnyone, SwitchOff)
}
