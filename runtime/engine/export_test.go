package engine

import "github.com/shipmyagent/ship/runtime/chat"

// What only the package's own tests reach: the Engine hands its parts to
// nobody, but a test may write a chat log beside it, drop a chat's
// in-memory history as a restart would, or count the journal's records.

// StoreOf is e's chat log.
func StoreOf(e *Engine) chat.Log { return e.store }

// ForgetHistory drops chatKey's in-memory history (the log keeps it).
func ForgetHistory(e *Engine, chatKey string) { e.runtime.Forget(chatKey) }

// JournalPending is how many runs the pending-work journal holds open.
func JournalPending(e *Engine) int { return e.journal.Pending() }
