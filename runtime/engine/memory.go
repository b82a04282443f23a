package engine

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/memory"
)

// shownNoteBytes bounds each set of notes /memory shows: a chat message
// has to fit every platform's limit (Telegram's 4,096 characters).
const shownNoteBytes = 1500

// memoryCommand answers "/memory" (show this chat's notes, and the
// speaker's own where they are kept), "/memory clear" (empty this chat's
// notes; in a group only an approver may) and "/memory clear me" (empty
// the speaker's own notes, anywhere: a person may always have ship
// forget what it noted about them).
func (e *Engine) memoryCommand(ctx context.Context, args string, req dispatch.RequestContext) string {
	if e.memory == nil {
		return "Long-term notes are not kept here."
	}
	sc := e.memory.ScopeOf(ctx, req.ChatKey, req)
	log := e.log.With().Str("chatKey", req.ChatKey).Str("identity", identity(req)).Logger()
	switch strings.ToLower(strings.Join(strings.Fields(args), " ")) {
	case "":
		return e.showNotes(ctx, sc)
	case "clear":
		if chat.IsGroup(req.ChatType) && !e.gov.current().CanApprove(identity(req)) {
			return "Only approvers may clear a group's notes. (Your own: /memory clear me.)"
		}
		if err := e.memory.Write(ctx, sc.Chat, ""); err != nil {
			log.Error().Err(err).Msg("clearing the chat's notes")
			return "Clearing the notes failed; they are unchanged. Try again."
		}
		log.Info().Msg("chat notes cleared by /memory clear")
		return "Done: this chat's notes are empty."
	case "clear me":
		who := identity(req)
		if req.Channel == chat.ChannelAPI || who == "" {
			return "Notes about a person are kept only for people writing on a platform."
		}
		if err := e.memory.Write(ctx, memory.Ref{Kind: memory.KindPerson, ID: who}, ""); err != nil {
			log.Error().Err(err).Msg("clearing a person's notes")
			return "Clearing your notes failed; they are unchanged. Try again."
		}
		log.Info().Msg("person notes cleared by /memory clear me")
		return "Done: I kept no notes about you any more."
	}
	return "/memory shows this chat's notes; /memory clear empties them; /memory clear me empties the notes about you."
}

// showNotes is what /memory shows of sc.
func (e *Engine) showNotes(ctx context.Context, sc memory.Scope) string {
	var b strings.Builder
	for _, r := range sc.Refs() {
		text, err := e.memory.Read(ctx, r)
		if err != nil {
			e.log.Error().Err(err).Str("notes", r.String()).Msg("reading notes for /memory")
			text = "(unreadable just now)"
		}
		text = strings.TrimSpace(text)
		title := "This chat's notes"
		if r.Kind == memory.KindPerson {
			title = "Notes about you"
		}
		if text == "" {
			if r.Kind == memory.KindPerson {
				continue
			}
			text = "(none yet: ask me to remember something)"
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(title + ":\n" + shorten(text, shownNoteBytes))
	}
	return b.String()
}

// shorten cuts text to max bytes at a rune boundary, saying so.
func shorten(text string, max int) string {
	if len(text) <= max {
		return text
	}
	n := max
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + "\n… (more in the console's Notes page)"
}
