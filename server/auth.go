package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/shipmyagent/ship/runtime/chat"
)

// NamedToken is a bearer token of its own: its holder acts as Identity in
// the tool policy, whatever userId a request body names.
type NamedToken struct {
	// Name says which token it is in logs and errors; never the token.
	Name  string
	Token string
	// Identity is who the holder is in the tool policy: "api:<something>".
	Identity string
}

// credential is one accepted token, kept only as its SHA-256.
type credential struct {
	digest   [sha256.Size]byte
	identity string
}

// authenticator knows every accepted token.
type authenticator struct {
	creds []credential
}

// setupAuth reads the tokens of the options. Config validation says the
// same in its own words; this guards other callers of New.
func (s *Server) setupAuth() error {
	if s.opts.Token == "" && len(s.opts.Tokens) == 0 {
		return nil
	}
	a := &authenticator{}
	if s.opts.Token != "" {
		a.creds = append(a.creds, credential{digest: sha256.Sum256([]byte(s.opts.Token)), identity: chat.APIToken})
	}
	for _, t := range s.opts.Tokens {
		if t.Token == "" {
			return fmt.Errorf("named token %q has no token", t.Name)
		}
		if !strings.HasPrefix(t.Identity, chat.ChannelAPI+":") || t.Identity == chat.APIAnonymous {
			return fmt.Errorf("named token %q: identity %q must start with api: and not be %s", t.Name, t.Identity, chat.APIAnonymous)
		}
		d := sha256.Sum256([]byte(t.Token))
		for _, c := range a.creds {
			if c.digest == d {
				return errors.New("named token " + t.Name + " has the same token as another")
			}
		}
		a.creds = append(a.creds, credential{digest: d, identity: t.Identity})
	}
	s.auth = a
	return nil
}

// authenticate returns the identity of the request's bearer token; ""
// when it has none (presented is false) or a wrong one. Every credential
// is compared, in constant time, so timing tells neither which token
// matched nor how much of one did.
func (a *authenticator) authenticate(r *http.Request) (identity string, presented bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	for _, c := range a.creds {
		if subtle.ConstantTimeCompare(got[:], c.digest[:]) == 1 {
			identity = c.identity
		}
	}
	return identity, true
}

type identityKey struct{}

func withIdentity(ctx context.Context, identity string) context.Context {
	return context.WithValue(ctx, identityKey{}, identity)
}

// callerIdentity is who the request acts as in the tool policy (withAuth
// sets it for every /api route); chat.APIAnonymous if nothing proved more.
func callerIdentity(ctx context.Context) string {
	if id, ok := ctx.Value(identityKey{}).(string); ok {
		return id
	}
	return chat.APIAnonymous
}

// identityMeta records in the user's chat log entry who the message acted
// as, next to its userId, which is only what the caller said.
func identityMeta(identity string) map[string]any {
	return map[string]any{"identity": identity}
}
