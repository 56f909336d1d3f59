package changes

import (
	"context"
	"sync"
	"testing"
	"time"

	"pluginhost/models"
)

func change(inst string, rev int64) models.StorageChange {
	return models.StorageChange{InstanceID: inst, StorageRevision: rev, Operation: models.OpUpdate}
}

func TestDeliveryInOrderPerInstance(t *testing.T) {
	b := NewBus()
	a := b.Subscribe("a")
	other := b.Subscribe("b")
	defer a.Close()
	defer other.Close()
	for r := int64(1); r <= QueueLength; r++ {
		b.Publish(change("a", r))
	}
	b.Publish(change("b", 1))
	ctx := context.Background()
	for r := int64(1); r <= QueueLength; r++ {
		c, ok := a.Next(ctx)
		if !ok || c.StorageRevision != r {
			t.Fatalf("got %d, want %d", c.StorageRevision, r)
		}
	}
	if c, _ := other.Next(ctx); c.InstanceID != "b" {
		t.Fatalf("other Instance got %+v", c)
	}
}

// A subscriber that falls behind ends on the latest revision with bounded
// memory, and never slows the publisher.
func TestSlowSubscriberCoalesces(t *testing.T) {
	b := NewBus()
	slow := b.Subscribe("a")
	fast := b.Subscribe("a")
	defer slow.Close()
	defer fast.Close()
	const n = 100000
	var got []int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, ok := fast.Next(context.Background())
			if !ok {
				return
			}
			got = append(got, c.StorageRevision)
			if c.StorageRevision == n {
				return
			}
		}
	}()
	// The slow subscriber reads nothing while this runs: a publisher that
	// waited for it would never return.
	for r := int64(1); r <= n; r++ {
		b.Publish(change("a", r))
	}
	wg.Wait()
	if got[len(got)-1] != n {
		t.Fatalf("the fast subscriber ended on %d", got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order: %d after %d", got[i], got[i-1])
		}
	}
	// The slow one holds at most the queue plus the latest.
	slow.mu.Lock()
	held := len(slow.queue)
	slow.mu.Unlock()
	if held > QueueLength {
		t.Fatalf("slow subscriber holds %d changes", held)
	}
	var last int64
	count := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		c, ok := slow.Next(ctx)
		cancel()
		if !ok {
			break
		}
		if c.StorageRevision <= last {
			t.Fatalf("out of order: %d after %d", c.StorageRevision, last)
		}
		last = c.StorageRevision
		count++
	}
	if last != n || count != QueueLength+1 || slow.Coalesced() != n-QueueLength-1 {
		t.Fatalf("slow subscriber: %d changes ending at %d, %d coalesced", count, last, slow.Coalesced())
	}
}

func TestCloseEndsNextAndUnsubscribes(t *testing.T) {
	b := NewBus()
	s := b.Subscribe("a")
	done := make(chan bool)
	go func() { _, ok := s.Next(context.Background()); done <- ok }()
	s.Close()
	if ok := <-done; ok {
		t.Fatal("Next returned a change after Close")
	}
	if n := b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after Close", n)
	}
	s.Close() // twice is fine
}
