package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/models"
)

// modelPicker decides which model answers each run: the one the request
// named (llmConfig), else the one the chat switched to, else the default.
//
// The catalog is swapped whole by a configuration reload (SetModels): a
// run reads it once, when it starts, and keeps the model it got to its
// end; the next run gets the new catalog.
type modelPicker struct {
	current atomic.Pointer[models.Catalog]
	choices *models.Choices
	log     zerolog.Logger
}

// catalog is the catalog in force now.
func (p *modelPicker) catalog() *models.Catalog { return p.current.Load() }

// ChatModel is the model chatKey uses now. In cluster mode that is one
// read of the shared choices; when it fails the turn still goes on, with
// the choice this replica saw last (or the default).
func (p *modelPicker) chatModel(ctx context.Context, chatKey string) models.Model {
	ch, ok, err := p.choices.Get(ctx, chatKey)
	if err != nil {
		p.log.Warn().Err(err).Str("chatKey", chatKey).Str("using", ch.Model).
			Msg("reading the chat's model choice failed; using the one this replica saw last")
	}
	cat := p.catalog()
	if ok {
		if m, ok := cat.Get(ch.Model); ok {
			return m
		}
	}
	return cat.Default()
}

// forRun returns the model of one run and its call options: the request's,
// with maxTokens from the model's settings where the request sets none.
func (p *modelPicker) forRun(ctx context.Context, chatKey string, o llm.Override, log zerolog.Logger) (models.Model, llm.CallOptions) {
	m := p.chatModel(ctx, chatKey)
	if o.Model != "" {
		if named, ok := p.catalog().Get(o.Model); ok {
			m = named
		} else {
			// Only after a restart or a reload with a changed ship.json:
			// the request was checked when it came in.
			log.Warn().Str("model", o.Model).Str("using", m.Name).Msg("the model this request named is no longer configured; using the chat's")
		}
	}
	call := o.CallOptions
	if call.MaxTokens == 0 {
		call.MaxTokens = m.Config.MaxTokens
	}
	return m, call
}

// Models are the configured models (GET /api/models, llmConfig).
func (e *Engine) Models() *models.Catalog { return e.picker.catalog() }

// SetModels puts cat in force from the next run on (a configuration
// reload): runs already going keep the model they started with. label is
// what /status names when cat has one model ("openai/gpt-4o-mini"), and
// switchRule is llm.switch; a bad rule changes nothing.
func (e *Engine) SetModels(cat *models.Catalog, label, switchRule string) error {
	rule, err := models.ParseSwitch(switchRule)
	if err != nil {
		return fmt.Errorf("llm.switch: %w", err)
	}
	e.picker.choices.SetCatalog(cat)
	e.picker.current.Store(cat)
	e.reloadable.Store(&reloadable{label: label, switchRule: rule})
	return nil
}

// reloadable are the engine's settings a configuration reload replaces
// besides the catalog.
type reloadable struct {
	label      string // the default model as /status names it
	switchRule string // llm.switch
}

// settings are the reloadable settings in force.
func (e *Engine) settings() *reloadable { return e.reloadable.Load() }

// ChatModel is the model chatKey uses now (its /model choice or the
// default).
func (e *Engine) ChatModel(ctx context.Context, chatKey string) models.Model {
	return e.picker.chatModel(ctx, chatKey)
}

// modelCommand answers "/model" (list) and "/model NAME" (switch this
// chat).
func (e *Engine) modelCommand(ctx context.Context, args string, req dispatch.RequestContext) string {
	cat := e.picker.catalog()
	current := e.picker.chatModel(ctx, req.ChatKey)
	name, _, _ := strings.Cut(strings.TrimSpace(args), " ")
	if name == "" {
		var b strings.Builder
		b.WriteString("Models:")
		for _, m := range cat.List() {
			fmt.Fprintf(&b, "\n• %s – %s/%s", m.Name, m.Config.Provider, m.Config.Model)
			if m.Default {
				b.WriteString(" (default)")
			}
			if m.Name == current.Name {
				b.WriteString(" ← this chat")
			}
		}
		if len(cat.List()) > 1 {
			if ok, why := e.maySwitch(req); ok {
				b.WriteString("\nSwitch this chat with /model NAME.")
			} else {
				b.WriteString("\n" + why)
			}
		}
		return b.String()
	}
	m, ok := cat.Get(name)
	if !ok {
		return fmt.Sprintf("There is no model %q. Configured: %s.", name, strings.Join(cat.Names(), ", "))
	}
	if m.Name == current.Name {
		return "This chat already uses " + m.Label() + "."
	}
	log := e.log.With().Str("chatKey", req.ChatKey).Str("identity", identity(req)).Str("model", m.Name).Logger()
	if ok, why := e.maySwitch(req); !ok {
		log.Info().Msg("model switch refused")
		return why
	}
	choice := m.Name
	if m.Default {
		choice = "" // back to the default, whatever it is later called
	}
	if err := e.picker.choices.Set(ctx, req.ChatKey, choice, identity(req)); err != nil {
		log.Error().Err(err).Msg("saving a model switch")
		return "Switching the model failed (it could not be saved); this chat still uses " + current.Name + ". Try again."
	}
	log.Info().Str("from", current.Name).Msg("model switched")
	if _, err := e.store.Append(ctx, chat.ChatLogEntryV1{
		Channel: req.Channel, ChatID: req.ChatID, ChatKey: req.ChatKey, UserID: req.UserID,
		Role: chat.RoleSystem, Text: "model switched to " + m.Name + " by /model",
		Meta: map[string]any{"event": "model", "model": m.Name, "from": current.Name},
	}); err != nil {
		log.Error().Err(err).Msg("logging a model switch")
	}
	return "This chat now uses " + m.Label() + ", from its next message on."
}

// maySwitch says whether req's sender may switch their chat's model, and
// if not, why (one line for the chat). The rule is llm.switch; approvers
// are the members of a tool-policy role with "approve": true.
func (e *Engine) maySwitch(req dispatch.RequestContext) (bool, string) {
	rule := e.settings().switchRule
	approver := func() (bool, string) {
		pol := e.gov.current()
		if pol.CanApprove(identity(req)) {
			return true, ""
		}
		where := ""
		if rule == models.SwitchPrivate {
			where = " in a group"
		}
		roles := pol.ApproverRoles()
		if len(roles) == 0 {
			return false, "Only approvers may switch the model" + where + ", and no role has \"approve\": true in ship.json."
		}
		return false, fmt.Sprintf("Only approvers (role %s) may switch the model%s.", strings.Join(roles, ", role "), where)
	}
	switch rule {
	case models.SwitchAnyone:
		return true, ""
	case models.SwitchOff:
		return false, "Switching the model is turned off here (llm.switch is \"off\" in ship.json)."
	case models.SwitchApprovers:
		return approver()
	}
	if !chat.IsGroup(req.ChatType) {
		return true, ""
	}
	return approver()
}
