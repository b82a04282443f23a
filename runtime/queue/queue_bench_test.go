package queue

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// chatKeys64 spreads benchmark items over 64 chats, like a busy bot.
func chatKeys64() []string {
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "chat-" + strconv.Itoa(i)
	}
	return keys
}

// benchEnqueueRun measures the queue's own overhead per item: enqueue,
// schedule, hand-off to a worker, run a no-op handler, release the chat.
func benchEnqueueRun(b *testing.B, concurrency int) {
	keys := chatKeys64()
	var wg sync.WaitGroup
	q := New(func(context.Context, Item[string]) { wg.Done() },
		Options{Concurrency: concurrency, Capacity: b.N + 1})
	defer q.Stop(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	wg.Add(b.N)
	for i := range b.N {
		if _, err := q.Enqueue(Item[string]{ChatKey: keys[i%len(keys)]}); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
}

// BenchmarkQueueEnqueueRun is the seed's shape: one serial worker.
func BenchmarkQueueEnqueueRun(b *testing.B) { benchEnqueueRun(b, 1) }

// BenchmarkQueueEnqueueRunConcurrency4 shows what the heap costs when
// several workers compete for runnable chats.
func BenchmarkQueueEnqueueRunConcurrency4(b *testing.B) { benchEnqueueRun(b, 4) }
