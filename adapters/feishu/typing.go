package feishu

import (
	"context"
	"errors"
	"sync"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

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
// runs in the background so the run does not wait for it; stop waits for it
// and removes the reaction. Failures are logged: typing never costs a reply.
func (a *Adapter) StartTyping(ctx context.Context, req dispatch.RequestContext) (stop func(context.Context)) {
	if req.MessageID == "" {
		return func(context.Context) {}
	}
	log := a.log.With().Str("chatKey", req.ChatKey).Str("messageId", req.MessageID).Logger()
	// The reaction must be put on (and known) even when the run ends
	// before the call does, or it could never be removed.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), typingTimeout)
	added := make(chan struct{})
	var reactionID string
	go func() {
		defer close(added)
		defer cancel()
		id, err := a.addReaction(bg, req.MessageID, TypingEmoji)
		if err != nil {
			log.Warn().Err(err).Msg("feishu typing reaction not added")
			return
		}
		reactionID = id
	}()
	var once sync.Once
	return func(ctx context.Context) {
		once.Do(func() {
			select {
			case <-added:
			case <-ctx.Done():
				log.Warn().Msg("feishu typing reaction still being added; left for the start-up clean-up")
				return
			}
			if reactionID == "" {
				return
			}
			if err := a.deleteReaction(ctx, req.MessageID, reactionID); err != nil {
				log.Warn().Err(err).Msg("feishu typing reaction not removed")
			}
		})
	}
}

// ClearTyping removes the Typing reactions the bot left on the message req
// answers (a run that crashed never removed its own). Other people's
// reactions stay.
func (a *Adapter) ClearTyping(ctx context.Context, req dispatch.RequestContext) error {
	if req.MessageID == "" {
		return nil
	}
	own, err := a.ownReactions(ctx, req.MessageID, TypingEmoji)
	if codeOf(err) == codeMessageGone {
		return nil // nothing is left on a message that is gone
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range own {
		if err := a.deleteReaction(ctx, req.MessageID, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
