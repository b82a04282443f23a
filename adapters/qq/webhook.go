package qq

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/tencent-connect/botgo/dto"
	"github.com/tencent-connect/botgo/event"
)

// Webhook signature headers.
const (
	headerSignature = "X-Signature-Ed25519"
	headerTimestamp = "X-Signature-Timestamp"
	maxWebhookBody  = 1 << 20
)

// ServeHTTP takes QQ's webhook calls (webhook mode). The signature is
// checked first: a call without a valid one gets 401 and changes nothing.
// Then op 13 (the address check when the URL is configured) is answered,
// and an event is recorded (and queued) before the answer, so QQ's retry of
// a call answered as failed is the only re-delivery; the model never runs
// inside the request.
//
// botgo's own webhook.HTTPHandler is not used: it answers a bad signature
// with 200, reads the body with one Read of Content-Length bytes, and its
// package does not build with this module's go.sum. Its parsing is:
// events go through botgo's event.ParseAndHandle, as on the gateway.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.opts.Mode != ModeWebhook {
		http.Error(w, "qq webhook mode is off", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if !a.signatureOK(r.Header, body) {
		a.log.Warn().Str("remote", r.RemoteAddr).Msg("qq webhook call with a bad signature rejected")
		http.Error(w, "invalid signature", http.StatusUnauthorized)
		return
	}
	if !utf8.Valid(body) {
		http.Error(w, "body is not valid UTF-8", http.StatusBadRequest)
		return
	}
	p := &dto.WSPayload{}
	if err := json.Unmarshal(body, p); err != nil {
		http.Error(w, "body is not a QQ payload", http.StatusBadRequest)
		return
	}
	switch p.OPCode {
	case dto.HTTPCallbackValidation:
		a.answerValidation(w, body)
	case dto.WSHeartbeat:
		seq, _ := p.Data.(float64)
		writeJSON(w, map[string]any{"op": dto.WSHeartbeatAck, "d": uint32(seq)})
	case dto.WSDispatchEvent:
		if _, ok := a.running(); !ok {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		p.RawMessage, p.Session = body, a.hook
		if err := event.ParseAndHandle(p); err != nil {
			// QQ delivers the event again: what we want.
			a.log.Error().Err(err).Str("eventId", p.EventID).Msg("recording a qq webhook event failed")
			writeJSON(w, map[string]any{"op": dto.HTTPCallbackAck, "d": 1})
			return
		}
		writeJSON(w, map[string]any{"op": dto.HTTPCallbackAck, "d": 0})
	default:
		writeJSON(w, map[string]any{"op": dto.HTTPCallbackAck, "d": 0})
	}
}

// signatureOK checks X-Signature-Ed25519 (hex) over X-Signature-Timestamp
// followed by the body, with the key derived from the webhook secret.
func (a *Adapter) signatureOK(h http.Header, body []byte) bool {
	ts := h.Get(headerTimestamp)
	sig, err := hex.DecodeString(h.Get(headerSignature))
	if ts == "" || err != nil || len(sig) != ed25519.SignatureSize {
		return false
	}
	msg := make([]byte, 0, len(ts)+len(body))
	msg = append(append(msg, ts...), body...)
	return ed25519.Verify(a.hookKey.Public().(ed25519.PublicKey), msg, sig)
}

// answerValidation answers op 13: plain_token back, and the signature of
// event_ts followed by plain_token.
func (a *Adapter) answerValidation(w http.ResponseWriter, body []byte) {
	var v struct {
		D struct {
			PlainToken string `json:"plain_token"`
			EventTs    string `json:"event_ts"`
		} `json:"d"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.D.PlainToken == "" || v.D.EventTs == "" {
		http.Error(w, "validation request without plain_token or event_ts", http.StatusBadRequest)
		return
	}
	sig := ed25519.Sign(a.hookKey, []byte(v.D.EventTs+v.D.PlainToken))
	a.log.Info().Msg("qq webhook address validated")
	writeJSON(w, map[string]string{"plain_token": v.D.PlainToken, "signature": hex.EncodeToString(sig)})
}

// signingKey derives QQ's webhook key from the secret as QQ does: the
// secret repeated to at least 32 bytes, the first 32 bytes are the seed.
func signingKey(secret string) ed25519.PrivateKey {
	seed := secret
	for len(seed) < ed25519.SeedSize {
		seed = strings.Repeat(seed, 2)
	}
	return ed25519.NewKeyFromSeed([]byte(seed[:ed25519.SeedSize]))
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
