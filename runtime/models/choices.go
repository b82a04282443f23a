package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/shipmyagent/ship/runtime/records"
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

// sharedChoice is a chat's record in cluster mode. "v" is its version: a
// replica reads the fields it knows of a newer version's record, so two
// versions run side by side during a rolling upgrade.
type sharedChoice struct {
	V int `json:"v"`
	Choice
}

// Choices are the models chats switched to, by chat key. A chat without a
// choice uses the catalog's default. Every change is written (to the file,
// or in cluster mode to the shared table) before it takes effect. Safe for
// concurrent use.
type Choices struct {
	path string // "" keeps the choices in memory only
	// shared, in cluster mode, holds one record per chat instead of the
	// file, so a /model made through one replica applies on all: every
	// Get reads it (one read from the stream leader).
	shared records.Table
	cat    *Catalog
	log    zerolog.Logger
	now    func() time.Time

	mu sync.Mutex
	// chats are the choices (alone), or in cluster mode the last one this
	// replica read of each chat: what a turn uses while the table cannot
	// be read.
	chats map[string]Choice
	// warned are the chats whose unconfigured choice was logged (cluster
	// mode reads it on every turn; once is enough).
	warned map[string]string
}

// OpenChoices reads the choices at path (none yet if the file is missing).
// A choice naming a model cat does not have (it left ship.json) is dropped,
// with a log line, so its chat is back on the default. path "" keeps
// choices in memory only.
func OpenChoices(path string, cat *Catalog, log zerolog.Logger) (*Choices, error) {
	c := &Choices{path: path, cat: cat, log: log, now: time.Now, chats: map[string]Choice{}}
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
			c.warnUnknown(key, ch)
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

// SharedChoices keeps the choices in t, one record per chat key (cluster
// mode: every replica's Choices over the same table agree). It reads
// nothing yet. A choice naming a model cat does not have is ignored, with
// a log line, but kept: another replica's ship.json may still have it.
func SharedChoices(t records.Table, cat *Catalog, log zerolog.Logger) *Choices {
	return &Choices{shared: t, cat: cat, log: log, now: time.Now, chats: map[string]Choice{}, warned: map[string]string{}}
}

// SetCatalog makes cat the catalog choices are checked against (a
// configuration reload). A choice naming a model cat lacks is kept: its
// chat uses the default until a later reload brings the model back.
func (c *Choices) SetCatalog(cat *Catalog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cat = cat
	clear(c.warned)
}

// warnUnknown logs that chatKey's choice names a model no longer
// configured.
func (c *Choices) warnUnknown(chatKey string, ch Choice) {
	c.log.Warn().Str("chatKey", chatKey).Str("model", ch.Model).Str("default", c.cat.Default().Name).
		Msg("the model this chat switched to is no longer configured; it uses the default again")
}

// Get returns the model chatKey switched to, if any. In cluster mode it
// reads the shared record; when that fails it returns the error with the
// choice this replica last saw (if any), which the caller may use instead.
func (c *Choices) Get(ctx context.Context, chatKey string) (Choice, bool, error) {
	if c.shared == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		ch, ok := c.chats[chatKey]
		return ch, ok, nil
	}
	ch, ok, err := c.readShared(ctx, chatKey)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		last, had := c.chats[chatKey]
		return last, had, err
	}
	if ok {
		if _, known := c.cat.Get(ch.Model); !known {
			if c.warned[chatKey] != ch.Model {
				c.warned[chatKey] = ch.Model
				c.warnUnknown(chatKey, ch)
			}
			ch, ok = Choice{}, false
		}
	}
	if ok {
		c.chats[chatKey] = ch
	} else {
		delete(c.chats, chatKey)
	}
	return ch, ok, nil
}

// readShared reads chatKey's record.
func (c *Choices) readShared(ctx context.Context, chatKey string) (Choice, bool, error) {
	r, err := c.shared.Get(ctx, chatKey)
	if errors.Is(err, records.ErrNotFound) {
		return Choice{}, false, nil
	}
	if err != nil {
		return Choice{}, false, fmt.Errorf("reading the model choice of %s: %w", chatKey, err)
	}
	var rec sharedChoice
	if err := json.Unmarshal(r.Value, &rec); err != nil {
		return Choice{}, false, fmt.Errorf("reading the model choice of %s: %w", chatKey, err)
	}
	return rec.Choice, true, nil
}

// Set records that chatKey now uses model (by says who switched); model ""
// returns the chat to the default.
func (c *Choices) Set(ctx context.Context, chatKey, model, by string) error {
	ch := Choice{Model: model, By: by, At: c.now().UnixMilli()}
	if c.shared != nil {
		return c.setShared(ctx, chatKey, ch)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]Choice, len(c.chats)+1)
	for k, v := range c.chats {
		next[k] = v
	}
	if model == "" {
		delete(next, chatKey)
	} else {
		next[chatKey] = ch
	}
	if err := c.write(next); err != nil {
		return err
	}
	c.chats = next
	return nil
}

// setShared writes chatKey's record (removes it for the default); the
// last switch wins, whichever replica made it.
func (c *Choices) setShared(ctx context.Context, chatKey string, ch Choice) error {
	data, err := json.Marshal(sharedChoice{V: choicesVersion, Choice: ch})
	if err != nil {
		return fmt.Errorf("encoding a model choice: %w", err)
	}
	err = records.Update(ctx, c.shared, chatKey, func([]byte, bool) ([]byte, bool, error) {
		return data, ch.Model == "", nil
	})
	if err != nil {
		return fmt.Errorf("saving the model choice of %s: %w", chatKey, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.Model == "" {
		delete(c.chats, chatKey)
	} else {
		c.chats[chatKey] = ch
	}
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
