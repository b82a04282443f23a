package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/shipmyagent/ship/runtime/ingress"
)

// Claims makes "seen before" cluster-wide (ingress.Claims): a platform
// message id is claimed in a KV bucket before its message is logged and
// queued, and marked taken after. A claim left "taking" by a replica that
// died is taken over by the next one that sees the message again.
type Claims struct{ n *Node }

// staleClaim is how long an open claim (claimed, not yet queued or given
// back) keeps another replica off the message: longer than claiming,
// logging and queueing take at their slowest (three hot-path budgets).
const staleClaim = 3*hotPathBudget + 5*time.Second

// Claims returns the cluster-wide dedupe state.
func (n *Node) Claims() *Claims { return &Claims{n: n} }

type claimValue struct {
	Replica string `json:"replica"`
	Boot    string `json:"boot"`
	Taken   bool   `json:"taken,omitempty"`
	At      int64  `json:"at"`
}

func claimKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "c." + hex.EncodeToString(sum[:16])
}

func (c *Claims) value(taken bool) []byte {
	b, _ := json.Marshal(claimValue{Replica: c.n.opts.Replica, Boot: c.n.boot, Taken: taken, At: time.Now().UnixMilli()})
	return b
}

// Claim implements ingress.Claims. It rides out a JetStream leader
// election (a replica died) for up to hotPathBudget.
func (c *Claims) Claim(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := retryHot(ctx, c.n, "claiming a message", func(ctx context.Context) error {
		var err error
		ok, err = c.claim(ctx, key)
		if errors.Is(err, ingress.ErrInFlight) {
			return permanent{err} // for the platform to deliver again, not to wait for here
		}
		return err
	})
	return ok, err
}

func (c *Claims) claim(ctx context.Context, key string) (bool, error) {
	k := claimKey(key)
	_, err := c.n.claims.Create(ctx, k, c.value(false))
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return false, fmt.Errorf("claiming a message: %w", err)
	}
	// From the leader: a follower may not have the claim that made the
	// create fail yet, and would send this round again and again.
	e, err := c.n.leaderGet(ctx, bucketClaims, k)
	if errors.Is(err, errNoValue) {
		return c.claim(ctx, key) // expired or dropped meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("claiming a message: %w", err)
	}
	var v claimValue
	if json.Unmarshal(e.data, &v) != nil || v.Taken {
		return false, nil
	}
	if v.Replica == c.n.opts.Replica && v.Boot == c.n.boot {
		// Ours: an earlier attempt whose answer was lost. (A second copy
		// arriving here at the same time is stopped by ingress first.)
		return true, nil
	}
	// A claim is settled (taken, or given back) within seconds; one left
	// open longer was abandoned by a replica that could not settle it
	// (NATS unreachable at that moment), and would hide the message.
	if time.Since(time.UnixMilli(v.At)) < staleClaim {
		live, err := c.n.alive(ctx, v.Replica, v.Boot)
		if err != nil {
			return false, fmt.Errorf("claiming a message: %w", err)
		}
		if live {
			return false, ingress.ErrInFlight
		}
	}
	// Its taker died, or gave up, before it was queued: take it over
	// (one replica wins).
	if _, err := c.n.claims.Update(ctx, k, c.value(false), e.rev); err != nil {
		return false, nil
	}
	c.n.log.Info().Str("from", v.Replica).Msg("taking over a message whose claim was left open (its replica died, or gave up, before queueing it)")
	return true, nil
}

// Taken implements ingress.Claims.
func (c *Claims) Taken(ctx context.Context, key string) {
	if _, err := c.n.claims.Put(ctx, claimKey(key), c.value(true)); err != nil {
		c.n.log.Warn().Err(err).Msg("marking a message taken; a re-delivery is still caught by the chat log")
	}
}

// Drop implements ingress.Claims.
func (c *Claims) Drop(ctx context.Context, key string) {
	if err := c.n.claims.Delete(ctx, claimKey(key)); err != nil {
		c.n.log.Debug().Err(err).Msg("giving back a message claim")
	}
}
