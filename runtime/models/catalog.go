// Package models keeps the models a chat may use: the Catalog of
// configured models, each built once and shared by every run, and the
// Choices each chat made with /model, kept in .ship/models.json.
package models

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/shipmyagent/ship/runtime/llm"
)

// ErrUnknown is returned for a name no model has.
var ErrUnknown = errors.New("no such model")

// Model is one configured model, built.
type Model struct {
	Name string
	// Config is the model's settings (normalized; it holds the key: never
	// show it).
	Config llm.Config
	// Default is set for the model chats start with.
	Default bool
	// LLM is the client, shared by every run that uses the model.
	LLM llms.Model
}

// Label is how a chat is told about the model: "fast (openai/gpt-4o-mini)".
func (m Model) Label() string {
	return fmt.Sprintf("%s (%s/%s)", m.Name, m.Config.Provider, m.Config.Model)
}

// Catalog is the configured models by name. It is immutable and safe for
// concurrent use.
type Catalog struct {
	list   []Model // the default first, then by name
	byName map[string]int
}

// New builds every model c configures (llm.Config.Entries), once: a
// client holds no connection until it is used, and a mistake shows at
// start-up rather than in the middle of a chat.
func New(c llm.Config) (*Catalog, error) {
	if err := c.ValidateModels(); err != nil {
		return nil, err
	}
	cat := &Catalog{byName: map[string]int{}}
	for _, n := range c.Entries() {
		m, err := llm.New(n.Config)
		if err != nil {
			if n.Default {
				return nil, err
			}
			return nil, fmt.Errorf("llm.models.%s: %w", n.Name, err)
		}
		cat.add(Model{Name: n.Name, Config: n.Config, Default: n.Default, LLM: m})
	}
	return cat, nil
}

// Single is a catalog of one ready model, the default (a bare engine, a
// test). cfg describes it for listings; it may be empty.
func Single(m llms.Model, cfg llm.Config) *Catalog {
	cat := &Catalog{byName: map[string]int{}}
	cat.add(Model{Name: llm.DefaultName, Config: cfg, Default: true, LLM: m})
	return cat
}

func (c *Catalog) add(m Model) {
	c.byName[m.Name] = len(c.list)
	c.list = append(c.list, m)
}

// Default is the model chats start with.
func (c *Catalog) Default() Model { return c.list[0] }

// Get returns the model called name.
func (c *Catalog) Get(name string) (Model, bool) {
	i, ok := c.byName[name]
	if !ok {
		return Model{}, false
	}
	return c.list[i], true
}

// List returns every model, the default first.
func (c *Catalog) List() []Model { return append([]Model(nil), c.list...) }

// Names lists the models' names, the default first.
func (c *Catalog) Names() []string {
	out := make([]string, len(c.list))
	for i, m := range c.list {
		out[i] = m.Name
	}
	return out
}

// Find resolves what a request names: a model's name, or, with a
// provider, a model of that provider by name or model id ("openai",
// "gpt-4o-mini"). Names are matched exactly, providers by their normalized
// form.
func (c *Catalog) Find(provider, model string) (Model, error) {
	if provider == "" {
		if m, ok := c.Get(model); ok {
			return m, nil
		}
		return Model{}, fmt.Errorf("%w %q; configured: %s", ErrUnknown, model, strings.Join(c.Names(), ", "))
	}
	p := llm.Config{Provider: provider}.Normalized().Provider
	for _, m := range c.list {
		if m.Config.Provider == p && (m.Name == model || m.Config.Model == model) {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("%w %s/%s; configured: %s", ErrUnknown, provider, model, strings.Join(c.Names(), ", "))
}
