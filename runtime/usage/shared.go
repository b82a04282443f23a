package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shipmyagent/ship/runtime/records"
)

// In cluster mode every replica answers turns, so a budget must count the
// turns of all of them: the day's counters of each chat and each person
// are records of a table all replicas share (one record per day and chat,
// per day and person, and the day's total), each turn added by
// compare-and-swap so two replicas counting at once both count. The
// replica's own files keep its share, for `ship usage` on that machine.

// sharedTimeout bounds one read or write of the shared counters: a front
// door that cannot reach them lets the turn in rather than hang.
const sharedTimeout = 2 * time.Second

// Share makes the tally count in tab as well, and answer budgets and
// reports from it.
func (t *Tally) Share(tab records.Table) { t.shared = tab }

func sharedKey(day, kind, key string) string { return day + "/" + kind + "/" + key }

// addShared adds c to the day's shared counters of chatKey, person and
// the day's total.
func (t *Tally) addShared(ctx context.Context, day, chatKey, person string, c Counts) error {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	keys := []string{sharedKey(day, "total", "")}
	if chatKey != "" {
		keys = append(keys, sharedKey(day, "chat", chatKey))
	}
	if person != "" {
		keys = append(keys, sharedKey(day, "person", person))
	}
	for _, k := range keys {
		err := records.Update(ctx, t.shared, k, func(old []byte, exists bool) ([]byte, bool, error) {
			var cur Counts
			if exists {
				if err := json.Unmarshal(old, &cur); err != nil {
					return nil, false, fmt.Errorf("reading shared token usage %s: %w", k, err)
				}
			}
			cur.add(c)
			b, err := json.Marshal(cur)
			return b, false, err
		})
		if err != nil {
			return fmt.Errorf("counting shared token usage: %w", err)
		}
	}
	return nil
}

// todayShared is what chatKey and person used today across the cluster.
func (t *Tally) todayShared(ctx context.Context, day, chatKey, person string) (chat, who Counts, err error) {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	read := func(k string) (Counts, error) {
		var c Counts
		r, err := t.shared.Get(ctx, k)
		if errors.Is(err, records.ErrNotFound) {
			return c, nil
		} else if err != nil {
			return c, err
		}
		return c, json.Unmarshal(r.Value, &c)
	}
	if chat, err = read(sharedKey(day, "chat", chatKey)); err != nil {
		return chat, who, fmt.Errorf("reading shared token usage: %w", err)
	}
	if person != "" {
		if who, err = read(sharedKey(day, "person", person)); err != nil {
			return chat, who, fmt.Errorf("reading shared token usage: %w", err)
		}
	}
	return chat, who, nil
}

// dayShared is a day's counters across the cluster, for a report; it
// also removes the records of days past KeepDays, so the table stays
// bounded.
func (t *Tally) dayShared(ctx context.Context, day string) (*Day, error) {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	recs, err := t.shared.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing shared token usage: %w", err)
	}
	oldest := oldestKept(DayOf(t.now()))
	d := newDay()
	for _, r := range recs {
		rday, rest, ok := strings.Cut(r.Key, "/")
		if ok && rday < oldest {
			_ = t.shared.Delete(ctx, r.Key, r.Rev)
			continue
		}
		if !ok || rday != day {
			continue
		}
		kind, key, _ := strings.Cut(rest, "/")
		var c Counts
		if json.Unmarshal(r.Value, &c) != nil {
			continue
		}
		switch kind {
		case "total":
			d.Total = c
		case "chat":
			d.Chats[key] = c
		case "person":
			d.People[key] = c
		}
	}
	return d, nil
}
