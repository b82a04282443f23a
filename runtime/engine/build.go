package engine

import (
	"fmt"

	"github.com/shipmyagent/ship/runtime/agent"
	"github.com/shipmyagent/ship/runtime/chat"
	"github.com/shipmyagent/ship/runtime/dispatch"
	"github.com/shipmyagent/ship/runtime/journal"
	"github.com/shipmyagent/ship/runtime/llm"
	"github.com/shipmyagent/ship/runtime/models"
	"github.com/shipmyagent/ship/runtime/policy"
)

// newPicker builds what picks each run's model: the catalog (one model
// when Options names no catalog), who may switch, and each chat's choice.
// It fills in opts.Model with the catalog's default when unset.
func newPicker(opts *Options) (*modelPicker, string, error) {
	cat := opts.Models
	if cat == nil {
		vision := llm.VisionOff
		if opts.Vision {
			vision = llm.VisionOn
		}
		cat = models.Single(opts.Model, llm.Config{Model: opts.ModelName, Vision: vision})
	}
	if opts.Model == nil {
		opts.Model = cat.Default().LLM
	}
	switchRule, err := models.ParseSwitch(opts.ModelSwitch)
	if err != nil {
		return nil, switchRule, fmt.Errorf("llm.switch: %w", err)
	}
	choices, err := openChoices(*opts, cat)
	if err != nil {
		return nil, switchRule, err
	}
	p := &modelPicker{choices: choices, log: opts.Logger}
	p.current.Store(cat)
	return p, switchRule, nil
}

// openChoices keeps each chat's /model choice in the shared table
// (cluster mode), else in the file at ModelChoicesPath.
func openChoices(opts Options, cat *models.Catalog) (*models.Choices, error) {
	if opts.ModelChoices != nil {
		return models.SharedChoices(opts.ModelChoices, cat, opts.Logger), nil
	}
	return models.OpenChoices(opts.ModelChoicesPath, cat, opts.Logger)
}

// state is what the engine keeps on disk (or, in cluster mode, shares):
// the chat log and the record of runs not yet finished.
type state struct {
	store     chat.Log
	journal   *journal.Journal // nil without a journal file
	runs      journal.Recorder // the journal, or cluster mode's run state
	recovered []journal.Item   // what the journal held at start
}

// openState opens the chat store (unless Options brings one) and the
// pending-work journal.
func openState(opts Options) (state, error) {
	st := state{store: opts.Store}
	if st.store == nil {
		fs, err := chat.OpenStore(chat.StoreOptions{Dir: opts.ChatsDir, Durability: opts.Durability, SegmentBytes: opts.SegmentBytes})
		if err != nil {
			return st, fmt.Errorf("opening chat store: %w", err)
		}
		st.store = fs
	}
	switch {
	case opts.Runs != nil:
		st.runs = opts.Runs
	case opts.JournalPath != "":
		jn, recovered, err := journal.Open(opts.JournalPath, opts.Durability != chat.DurabilityNone)
		if err != nil {
			_ = st.store.Close()
			return st, fmt.Errorf("opening journal: %w", err)
		}
		st.journal, st.recovered, st.runs = jn, recovered, jn
	}
	return st, nil
}

// close closes what openState opened, for a New that fails later.
func (st state) close() {
	_ = st.store.Close()
	if st.journal != nil {
		_ = st.journal.Close()
	}
}

// newGovernor builds the tool policy's gate: the policy in force, the
// tools whose commands rules may name, and the approvals (file or shared
// table).
func newGovernor(opts Options, reg *dispatch.Registry, tools []agent.Tool) (*governor, error) {
	gov := &governor{policy: opts.Policy, registry: reg, log: opts.Logger, wake: make(chan struct{}, 1),
		liners: map[string]agent.CommandLiner{}}
	for _, t := range tools {
		if l, ok := t.(agent.CommandLiner); ok {
			gov.liners[t.Definition().Name] = l
		}
	}
	switch {
	case opts.Approvals != nil:
		gov.approvals = policy.OpenShared(opts.Approvals, gov.current().StoreOptions())
	case opts.ApprovalsPath != "":
		var err error
		gov.approvals, err = policy.OpenStore(opts.ApprovalsPath, gov.current().StoreOptions())
		if err != nil {
			return nil, fmt.Errorf("opening approvals: %w", err)
		}
	}
	return gov, nil
}
