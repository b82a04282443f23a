package telegram

import (
	crand "crypto/rand"
	"encoding/hex"
)

// randomSecret is the webhook secret when none is configured.
func randomSecret() string {
	b := make([]byte, 24)
	if _, err := crand.Read(b); err != nil {
		panic("telegram: no randomness for the webhook secret: " + err.Error())
	}
	return hex.EncodeToString(b)
}
