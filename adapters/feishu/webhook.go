package feishu

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
)

// maxWebhookBody bounds a webhook call; events are a few KB.
const maxWebhookBody = 1 << 20

// webhookRetryHorizon is how old a signed call's timestamp may be.
//
// What Feishu does (open.feishu.cn/document/server-docs/event-subscription-
// guide/overview, "事件推送"): a delivery not answered with HTTP 200 within
// 3 s is re-sent 15 s, 5 min, 1 h and 6 h later (4 retries at most, "about
// 7.1 hours"), with the same header.event_id; deliveries are at-least-once,
// so a receiver must dedupe by event_id. The signature is
// sha256(X-Lark-Request-Timestamp + X-Lark-Request-Nonce + encrypt key +
// body) (".../encrypt-key-encryption-configuration-case"). Neither page sets
// a freshness window or says whether a retry gets a new timestamp and nonce,
// and the SDK checks no timestamp at all (VerifySign in
// event/dispatcher/dispatcher.go of oapi-sdk-go v3.12.0 compares the
// signature only). So a genuine retry may carry the first delivery's
// timestamp, hours old; a 5-minute window refused every retry after the
// first, and with it the event (a message sent while ship restarted was
// never answered).
//
// Why a longer window is safe: the timestamp is signed, so without the
// encrypt key no one can make a call with any timestamp; what the window
// admits beyond 5 minutes is only a byte-for-byte replay of a call Feishu
// really sent, of an event at most webhookRetryHorizon old. Such a replay
// is a duplicate delivery, which the event-id set (seen.go, kept on disk)
// and the chat log's message ids already make harmless: it is answered 200
// and handled never again. Older calls, and calls from more than
// WebhookMaxAge in the future, are refused as before.
const webhookRetryHorizon = 8 * time.Hour

// Why a webhook call is refused (logged, never sent back in detail).
var (
	errUnsigned     = errors.New("call is not signed")
	errBadSignature = errors.New("signature does not match")
	errStale        = errors.New("timestamp missing or outside the allowed window (replay?)")
	errNotEncrypted = errors.New("body is not encrypted with the encrypt key")
	errBadToken     = errors.New("verification token does not match")
)

// ServeHTTP takes Feishu's webhook calls at WebhookPath. Every call must be
// signed with the encrypt key and no older than Feishu's retries go
// (webhookRetryHorizon), else it gets 401 and changes nothing: the SDK's
// own handler checks signatures only when an encrypt key is set, and
// answers a bad one with 500, which invites retries. The URL
// verification call, which Feishu does not sign, is answered when it
// decrypts with the key (and carries the verification token, if set). The
// event is recorded before the 200; the model never runs inside the call.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"msg": "POST only"})
		return
	}
	if a.opts.Mode != ModeWebhook {
		writeJSON(w, http.StatusNotFound, map[string]string{"msg": "the feishu webhook is off (websocket mode)"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"msg": "unreadable body"})
		return
	}
	if len(body) > maxWebhookBody {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"msg": "body too large"})
		return
	}
	plain, err := a.verifyWebhook(r.Header, body)
	if errors.Is(err, errInvalidText) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"msg": "event is not valid UTF-8"})
		return
	}
	if err != nil {
		a.log.Warn().Str("reason", err.Error()).Str("remote", r.RemoteAddr).Msg("feishu webhook call refused")
		writeJSON(w, http.StatusUnauthorized, map[string]string{"msg": "unauthorized"})
		return
	}
	if plain.Type == "url_verification" {
		writeJSON(w, http.StatusOK, map[string]string{"challenge": plain.Challenge})
		return
	}
	a.mu.RLock()
	ready := a.ready && !a.closed
	a.mu.RUnlock()
	if !ready {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"msg": "starting"})
		return
	}
	// The SDK's handler decrypts (again) and dispatches to onMessage; its
	// 500 on a handler error makes Feishu deliver the event again.
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	a.hook(w, r)
}

// webhookPlain is what the adapter reads of a decrypted call.
type webhookPlain struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Challenge string `json:"challenge"`
	Header    *struct {
		Token string `json:"token"`
	} `json:"header"`
}

// verifyWebhook checks the signature and age of a call, decrypts it and
// checks its verification token. A call may be as old as Feishu's retries
// (see webhookRetryHorizon): its event id, not its age, keeps it from being
// handled twice.
func (a *Adapter) verifyWebhook(h http.Header, body []byte) (webhookPlain, error) {
	var p webhookPlain
	sig := h.Get("X-Lark-Signature")
	if sig != "" {
		ts := h.Get("X-Lark-Request-Timestamp")
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return p, errStale
		}
		// Past: Feishu's retries plus clock skew; future: clock skew only.
		if age := time.Since(time.Unix(sec, 0)); age > webhookRetryHorizon+a.opts.WebhookMaxAge || age < -a.opts.WebhookMaxAge {
			return p, errStale
		}
		want := larkevent.Signature(ts, h.Get("X-Lark-Request-Nonce"), a.opts.EncryptKey, string(body))
		// Compare digests so the comparison takes the same time whatever
		// the lengths.
		x, y := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(sig))
		if subtle.ConstantTimeCompare(x[:], y[:]) != 1 {
			return p, errBadSignature
		}
	}
	var enc struct {
		Encrypt string `json:"encrypt"`
	}
	if json.Unmarshal(body, &enc) != nil || enc.Encrypt == "" {
		return p, errNotEncrypted
	}
	plain, err := decrypt(enc.Encrypt, a.opts.EncryptKey)
	if err != nil || json.Unmarshal(plain, &p) != nil {
		return webhookPlain{}, errNotEncrypted
	}
	if !utf8.Valid(plain) {
		return webhookPlain{}, errInvalidText
	}
	token := p.Token
	if p.Header != nil {
		token = p.Header.Token
	}
	switch {
	case sig == "" && p.Type != "url_verification":
		return webhookPlain{}, errUnsigned
	case a.opts.VerificationToken != "" && !equalSecret(token, a.opts.VerificationToken):
		return webhookPlain{}, errBadToken
	}
	return p, nil
}

func equalSecret(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errInvalidText refuses an event whose text is not valid UTF-8: it would
// reach the model mangled.
var errInvalidText = errors.New("event is not valid UTF-8")

// decrypt wraps the SDK's EventDecrypt, which panics (slices out of range)
// on ciphertext whose plaintext has a '}' before its first '{' — something
// any caller can send, key or not.
func decrypt(ciphertext, key string) (plain []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("decrypting event: %v", p)
		}
	}()
	return larkevent.EventDecrypt(ciphertext, key)
}
