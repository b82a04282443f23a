package feishu

import (
	"context"
	"errors"
	"sync"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/dispatch"
)

// TypingEmoji is the reaction that shows the bot is working on a message:
// Feishu's own "Typing" sticker (emoji_type keys are case-sensitive; the
// native stickers are camel case).
const TypingEmoji = "Typing"

// typingTimeout bounds the calls that put the reaction on and take it off,
// whatever the run's context does: a reaction that is never taken off is
// what must not happen.
const typingTimeout = 30 * time.Second

// StartTyping puts the Typing reaction on the message req answers. The call
// runs in the background so the run does not wait for it; stop removes the
// reaction (once it is on, if the call is still under way). Failures are
// logged: typing never costs a reply.
func (a *Adapter) StartTyping(ctx context.Context, req dispatch.RequestContext) (stop func(context.Context)) {
	if req.MessageID == "" || !a.streaming.Load() {
		return func(context.Context) {}
	}
	t := &typist{a: a, messageID: req.MessageID, added: make(chan struct{}),
		log: a.log.With().Str("chatKey", req.ChatKey).Str("messageId", req.MessageID).Logger()}
	// The reaction must be put on (and known) even when the run ends
	// before the call does, or it could never be removed.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), typingTimeout)
	go func() {
		defer cancel()
		t.add(bg)
	}()
	var once sync.Once
	return func(ctx context.Context) { once.Do(func() { t.stop(ctx) }) }
}

// typist is one StartTyping: its reaction, and who removes it.
type typist struct {
	a         *Adapter
	messageID string
	log       zerolog.Logger
	added     chan struct{} // closed when the add call has ended

	mu       sync.Mutex
	id       string // the reaction, once on
	done     bool   // the add call has ended
	orphaned bool   // stop gave up waiting: the add removes its reaction itself
}

func (t *typist) add(ctx context.Context) {
	t.a.typing.adding(t.messageID)
	id, err := t.a.addReaction(ctx, t.messageID, TypingEmoji)
	t.a.typing.added(t.messageID, id)
	if err != nil {
		t.log.Warn().Err(err).Msg("feishu typing reaction not added")
	}
	t.mu.Lock()
	t.id, t.done = id, true
	orphaned := t.orphaned
	t.mu.Unlock()
	close(t.added)
	if orphaned {
		t.remove(ctx)
	}
}

func (t *typist) stop(ctx context.Context) {
	// Taking the reaction off is worth a call even when ctx is done.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), typingTimeout)
	defer cancel()
	select {
	case <-t.added:
	case <-ctx.Done():
		t.mu.Lock()
		if !t.done {
			t.orphaned = true
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
	t.remove(rctx)
}

// remove takes the reaction off, if there is one.
func (t *typist) remove(ctx context.Context) {
	if t.id == "" {
		return
	}
	if err := t.a.deleteReaction(ctx, t.messageID, t.id); err != nil {
		t.log.Warn().Err(err).Msg("feishu typing reaction not removed")
	}
	t.a.typing.released(t.messageID, t.id)
}

// ClearTyping removes the Typing reactions the bot left on the message req
// answers (a run that crashed never removed its own). Other people's
// reactions stay, and so does the reaction of a run of this process that
// is working on the message now (the message run again after the crash).
func (a *Adapter) ClearTyping(ctx context.Context, req dispatch.RequestContext) error {
	if req.MessageID == "" {
		return nil
	}
	keep := a.typing.clearing(req.MessageID)
	defer a.typing.cleared(req.MessageID)
	own, err := a.ownReactions(ctx, req.MessageID, TypingEmoji)
	if codeOf(err) == codeMessageGone {
		return nil // nothing is left on a message that is gone
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range own {
		if keep[id] {
			continue
		}
		if err := a.deleteReaction(ctx, req.MessageID, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// typingBook keeps StartTyping and ClearTyping of one message apart. At
// start-up the engine clears a crashed run's reaction while the same
// message runs again, and Feishu may answer the new run's reaction with
// the leftover one (one reaction of a kind per operator): the clean-up
// waits for reactions being added, skips the ones running typists hold,
// and new ones wait for the clean-up.
type typingBook struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]int            // message id → adds in flight
	busy    map[string]bool           // message id → being cleared
	held    map[string]map[string]int // message id → reaction ids running typists hold
}

func (b *typingBook) init() {
	if b.cond == nil {
		b.cond = sync.NewCond(&b.mu)
		b.pending, b.busy, b.held = map[string]int{}, map[string]bool{}, map[string]map[string]int{}
	}
}

// adding notes an add on messageID, once no clean-up of it runs.
func (b *typingBook) adding(messageID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	for b.busy[messageID] {
		b.cond.Wait()
	}
	b.pending[messageID]++
}

// added notes the end of an add; id is the reaction, "" when none.
func (b *typingBook) added(messageID, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[messageID]--; b.pending[messageID] == 0 {
		delete(b.pending, messageID)
	}
	if id != "" {
		if b.held[messageID] == nil {
			b.held[messageID] = map[string]int{}
		}
		b.held[messageID][id]++
	}
	b.cond.Broadcast()
}

// released notes that a typist let go of reaction id.
func (b *typingBook) released(messageID, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[messageID] == nil {
		return
	}
	if b.held[messageID][id]--; b.held[messageID][id] <= 0 {
		delete(b.held[messageID], id)
		if len(b.held[messageID]) == 0 {
			delete(b.held, messageID)
		}
	}
}

// clearing starts a clean-up of messageID once no add on it is in flight,
// and returns the reactions to keep.
func (b *typingBook) clearing(messageID string) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	for b.pending[messageID] > 0 || b.busy[messageID] {
		b.cond.Wait()
	}
	b.busy[messageID] = true
	keep := map[string]bool{}
	for id := range b.held[messageID] {
		keep[id] = true
	}
	return keep
}

// cleared ends a clean-up of messageID.
func (b *typingBook) cleared(messageID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.busy, messageID)
	b.cond.Broadcast()
}

// maxReactionPages bounds the listing of one message's reactions.
const maxReactionPages = 20

// ownReactions lists the ids of the bot's emoji reactions on messageID. All
// pages are read before anything is deleted, so that deleting cannot move
// reactions past a page token.
func (a *Adapter) ownReactions(ctx context.Context, messageID, emoji string) ([]string, error) {
	var own []string
	page := ""
	for range maxReactionPages {
		var items []*larkim.MessageReaction
		next := ""
		_, err := a.call(ctx, "reaction list", retryAll, func(ctx context.Context) (apiResult, error) {
			b := larkim.NewListMessageReactionReqBuilder().MessageId(messageID).ReactionType(emoji).PageSize(50)
			if page != "" {
				b.PageToken(page)
			}
			resp, err := a.cli.Im.V1.MessageReaction.List(ctx, b.Build())
			if err != nil {
				return apiResult{}, err
			}
			if resp.Data != nil {
				items = resp.Data.Items
				if resp.Data.HasMore != nil && *resp.Data.HasMore && resp.Data.PageToken != nil {
					next = *resp.Data.PageToken
				}
			}
			return resultOf(resp.ApiResp, resp.CodeError), nil
		})
		if err != nil {
			return nil, err
		}
		for _, r := range items {
			if r != nil && r.ReactionId != nil && r.Operator != nil && a.isOwn(r.Operator) {
				own = append(own, *r.ReactionId)
			}
		}
		if next == "" || next == page {
			break
		}
		page = next
	}
	return own, nil
}

// isOwn reports whether a reaction's operator is this app: operator_id is
// the app id when operator_type is "app".
func (a *Adapter) isOwn(op *larkim.Operator) bool {
	return op.OperatorType != nil && *op.OperatorType == "app" &&
		op.OperatorId != nil && *op.OperatorId == a.opts.AppID
}

// addReaction puts emoji on messageID and returns the reaction's id.
func (a *Adapter) addReaction(ctx context.Context, messageID, emoji string) (string, error) {
	var id string
	_, err := a.call(ctx, "reaction", retryAll, func(ctx context.Context) (apiResult, error) {
		resp, err := a.cli.Im.V1.MessageReaction.Create(ctx, larkim.NewCreateMessageReactionReqBuilder().
			MessageId(messageID).
			Body(larkim.NewCreateMessageReactionReqBodyBuilder().
				ReactionType(larkim.NewEmojiBuilder().EmojiType(emoji).Build()).Build()).
			Build())
		if err != nil {
			return apiResult{}, err
		}
		if resp.Data != nil && resp.Data.ReactionId != nil {
			id = *resp.Data.ReactionId
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	return id, err
}

// deleteReaction removes the bot's reaction reactionID from messageID.
func (a *Adapter) deleteReaction(ctx context.Context, messageID, reactionID string) error {
	_, err := a.call(ctx, "reaction removal", retryAll, func(ctx context.Context) (apiResult, error) {
		resp, err := a.cli.Im.V1.MessageReaction.Delete(ctx, larkim.NewDeleteMessageReactionReqBuilder().
			MessageId(messageID).ReactionId(reactionID).Build())
		if err != nil {
			return apiResult{}, err
		}
		return resultOf(resp.ApiResp, resp.CodeError), nil
	})
	return err
}
