package fakelark

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Webhook headers Feishu signs its calls with.
const (
	HeaderTimestamp = "X-Lark-Request-Timestamp"
	HeaderNonce     = "X-Lark-Request-Nonce"
	HeaderSignature = "X-Lark-Signature"
)

// Encrypt encrypts plaintext as Feishu does for webhook calls: AES-256-CBC
// with key sha256(encryptKey), PKCS#7 padding, a random IV, and
// base64(IV ‖ ciphertext).
func Encrypt(encryptKey string, plaintext []byte) (string, error) {
	key := sha256.Sum256([]byte(encryptKey))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return "", fmt.Errorf("fakelark: encrypt: %w", err)
	}
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	buf := make([]byte, aes.BlockSize+len(plaintext)+pad)
	iv := buf[:aes.BlockSize]
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("fakelark: encrypt: %w", err)
	}
	copy(buf[aes.BlockSize:], plaintext)
	for i := len(buf) - pad; i < len(buf); i++ {
		buf[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(buf[aes.BlockSize:], buf[aes.BlockSize:])
	return base64.StdEncoding.EncodeToString(buf), nil
}

// Sign is the X-Lark-Signature of a webhook call:
// hex(sha256(timestamp + nonce + encryptKey + body)).
func Sign(timestamp, nonce, encryptKey string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp + nonce + encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// EncryptedBody is the webhook body {"encrypt": Encrypt(plaintext)}.
func EncryptedBody(encryptKey string, plaintext []byte) ([]byte, error) {
	enc, err := Encrypt(encryptKey, plaintext)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"encrypt": enc})
}

// WebhookRequest builds a webhook POST of body to url signed with
// encryptKey at time at, as Feishu sends it. Tests tamper with the result to
// forge calls.
func WebhookRequest(ctx context.Context, url, encryptKey string, body []byte, at time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = signedHeader(encryptKey, body, at)
	return req, nil
}

// signedHeader is the header of a webhook call of body signed at time at
// with a fresh nonce.
func signedHeader(encryptKey string, body []byte, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	n := hex.EncodeToString(nonce)
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderNonce, n)
	h.Set(HeaderSignature, Sign(ts, n, encryptKey, body))
	return h
}

// WebhookCall is one signed webhook call, kept so that it can be sent again
// byte for byte: Feishu's retry of an event it could not deliver (its docs
// do not say that a retry is signed anew, so a receiver must take one
// carrying the first delivery's timestamp), or an eavesdropper's replay.
type WebhookCall struct {
	Body   []byte      // {"encrypt": …}
	Header http.Header // Content-Type and the three X-Lark-* headers
}

// NewWebhookCall encrypts ev with encryptKey and signs it as sent at time
// at. The fake learns where ev's message lives, as DeliverWebhook does.
func (s *Server) NewWebhookCall(encryptKey string, ev Event, at time.Time) (WebhookCall, error) {
	s.remember(ev.MessageID, ev.info())
	body, err := EncryptedBody(encryptKey, s.EventJSON(ev))
	if err != nil {
		return WebhookCall{}, err
	}
	return WebhookCall{Body: body, Header: signedHeader(encryptKey, body, at)}, nil
}

// Send posts c to url exactly as built, and returns the HTTP status and
// body of the answer. Sending one call twice is a retry (or a replay).
func (s *Server) Send(ctx context.Context, url string, c WebhookCall) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(c.Body))
	if err != nil {
		return 0, "", err
	}
	req.Header = c.Header.Clone()
	return s.Do(req)
}

// URLVerification is the plaintext of the challenge Feishu sends when a
// webhook URL is configured.
func (s *Server) URLVerification(challenge string) []byte {
	b, _ := json.Marshal(map[string]string{ // strings only
		"challenge": challenge, "token": s.opts.VerificationToken, "type": "url_verification",
	})
	return b
}

// DeliverWebhook POSTs ev to url as Feishu does: encrypted with encryptKey,
// signed, now. It returns the HTTP status and body of the answer.
func (s *Server) DeliverWebhook(ctx context.Context, url, encryptKey string, ev Event) (int, string, error) {
	s.remember(ev.MessageID, ev.info())
	return s.PostPlain(ctx, url, encryptKey, s.EventJSON(ev))
}

// PostPlain delivers any plaintext payload (an event, a URL verification)
// encrypted and signed like DeliverWebhook.
func (s *Server) PostPlain(ctx context.Context, url, encryptKey string, plaintext []byte) (int, string, error) {
	body, err := EncryptedBody(encryptKey, plaintext)
	if err != nil {
		return 0, "", err
	}
	req, err := WebhookRequest(ctx, url, encryptKey, body, time.Now())
	if err != nil {
		return 0, "", err
	}
	return s.Do(req)
}

// Do sends a webhook request (built by WebhookRequest, perhaps tampered
// with) and returns the status and body of the answer.
func (s *Server) Do(req *http.Request) (int, string, error) {
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}
