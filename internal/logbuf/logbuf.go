// Package logbuf holds Buffer, a bytes.Buffer that one goroutine may write
// (a logger, a child process's output copier) while another reads it, as
// tests do to check what was logged.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer is a concurrency-safe bytes.Buffer. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
