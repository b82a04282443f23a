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
	ts := strconv.FormatInt(at.Unix(), 10)
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	n := hex.EncodeToString(nonce)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderNonce, n)
	req.Header.Set(HeaderSignature, Sign(ts, n, encryptKey, body))
	return req, nil
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
