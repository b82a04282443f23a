package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/shipmyagent/ship/runtime/statefile"
)

// Choice is the model a chat switched to.
type Choice struct {
	Model string `json:"model"`
	// By is who switched ("telegram:123"), At when (ms since the epoch).
	By string `json:"by,omitempty"`
	At int64  `json:"at,omitempty"`
}

// choicesFile is the file format of .ship/models.json.
type choicesFile struct {
	Version int               `json:"version"`
	Chats   map[string]Choice `json:"chats"`
}

const choicesVersion = 1

// Choices are the models chats switched to, by chat key. A chat without a
// choice uses the catalog's default. Every change is written to the file
// (atomically, fsynced) before it takes effect. Safe for concurrent use.
type Choices struct {
	path string // "" keeps the choices in memory only
	now  func() time.Time

	mu    sync.Mutex
	chats map[string]Choice
}

// OpenChoices reads the choices at path (none yet if the file is missing).
// A choice naming a model cat does not have (it left ship.json) is dropped,
// with a log line, so its chat is back on the default. path "" keeps
// choices in memory only.
func OpenChoices(path string, cat *Catalog, log zerolog.Logger) (*Choices, error) {
	c := &Choices{path: path, now: time.Now, chats: map[string]Choice{}}
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("reading model choices: %w", err)
	}
	var f choicesFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reading model choices %s: not valid JSON (%v); fix or remove the file", path, err)
	}
	dropped := false
	for key, ch := range f.Chats {
		if _, ok := cat.Get(ch.Model); !ok {
			log.Warn().Str("chatKey", key).Str("model", ch.Model).Str("default", cat.Default().Name).
				Msg("the model this chat switched to is no longer configured; it uses the default again")
			dropped = true
			continue
		}
		c.chats[key] = ch
	}
	if dropped {
		if err := c.write(c.chats); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Get returns the model chatKey switched to, if any.
func (c *Choices) Get(chatKey string) (Choice, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.chats[chatKey]
	return ch, ok
}

// Set records that chatKey now uses model (by says who switched); model ""
// returns the chat to the default.
func (c *Choices) Set(chatKey, model, by string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]Choice, len(c.chats)+1)
	for k, v := range c.chats {
		next[k] = v
	}
	if model == "" {
		delete(next, chatKey)
	} else {
		next[chatKey] = Choice{Model: model, By: by, At: c.now().UnixMilli()}
	}
	if err := c.write(next); err != nil {
		return err
	}
	c.chats = next
	return nil
}

// write replaces the file with chats, atomically and durably.
func (c *Choices) write(chats map[string]Choice) error {
	if c.path == "" {
		return nil
	}
	data, err := json.MarshalIndent(choicesFile{Version: choicesVersion, Chats: chats}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding model choices: %w", err)
	}
	if err := statefile.Write(c.path, append(data, '\n')); err != nil {
		return fmt.Errorf("saving model choices: %w", err)
	}
	return nil
}
