package fakeqq

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webhook headers QQ sends.
const (
	HeaderSignature = "X-Signature-Ed25519"
	HeaderTimestamp = "X-Signature-Timestamp"
	opCallbackCheck = 13
)

// Key derives QQ's webhook signing key from the bot secret: the secret,
// repeated until it is at least 32 bytes long, cut to 32 bytes, is the
// ed25519 seed.
func Key(secret string) ed25519.PrivateKey {
	if secret == "" {
		secret = "\x00"
	}
	seed := secret
	for len(seed) < ed25519.SeedSize {
		seed = strings.Repeat(seed, 2)
	}
	return ed25519.NewKeyFromSeed([]byte(seed[:ed25519.SeedSize]))
}

// Sign is the X-Signature-Ed25519 value QQ sends: hex of the ed25519
// signature of timestamp followed by body.
func Sign(secret, timestamp string, body []byte) string {
	msg := append([]byte(timestamp), body...)
	return hex.EncodeToString(ed25519.Sign(Key(secret), msg))
}

// DeliverWebhook posts ev to url as QQ's webhook does ({"op":0,"id","t","d"}),
// signed with secret, and returns the HTTP status and body of the answer.
// Deliver the same event twice to play a re-delivery.
func (s *Server) DeliverWebhook(ctx context.Context, url, secret string, ev Event) (int, []byte, error) {
	body, err := json.Marshal(map[string]any{"op": opDispatch, "id": ev.ID, "t": ev.Type, "d": ev.Data})
	if err != nil {
		return 0, nil, fmt.Errorf("fakeqq: encoding event: %w", err)
	}
	return s.postSigned(ctx, url, secret, body)
}

// ValidateWebhook plays the callback address check QQ makes when a webhook
// URL is configured (op 13 with plain_token and event_ts) and verifies that
// the answer echoes plain_token and signs event_ts+plain_token with the key
// of secret.
func (s *Server) ValidateWebhook(ctx context.Context, url, secret string) error {
	const plain = "Arq0D5A61EgUu4OxUvOp"
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	body, _ := json.Marshal(map[string]any{"op": opCallbackCheck, "d": map[string]string{"plain_token": plain, "event_ts": ts}})
	status, resp, err := s.postSigned(ctx, url, secret, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("fakeqq: validation answered HTTP %d: %s", status, resp)
	}
	var ack struct {
		PlainToken string `json:"plain_token"`
		Signature  string `json:"signature"`
	}
	if err := json.Unmarshal(resp, &ack); err != nil {
		return fmt.Errorf("fakeqq: validation answer is not JSON: %w", err)
	}
	sig, err := hex.DecodeString(ack.Signature)
	if err != nil || ack.PlainToken != plain {
		return fmt.Errorf("fakeqq: validation answer %s does not echo the token with a hex signature", resp)
	}
	if !ed25519.Verify(Key(secret).Public().(ed25519.PublicKey), []byte(ts+plain), sig) {
		return errors.New("fakeqq: validation answer signature does not verify")
	}
	return nil
}

func (s *Server) postSigned(ctx context.Context, url, secret string, body []byte) (int, []byte, error) {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("fakeqq: webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "QQBot-Callback")
	req.Header.Set("X-Bot-Appid", s.opts.AppID)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("fakeqq: webhook delivery: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBody))
	if err != nil {
		return resp.StatusCode, b, fmt.Errorf("fakeqq: webhook answer: %w", err)
	}
	return resp.StatusCode, b, nil
}
