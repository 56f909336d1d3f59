// Package changes carries committed storage changes to the sinks that watch
// an Instance: the in-process bus, and (with Redis, package relay) across
// replicas. Publishing never blocks: a sink's Deliver must not block either
// (live.Hub's subscriptions queue what they cannot send yet, dropping the
// oldest, so that a client always ends on the latest revision).
//
// Publisher is what a committer of changes publishes to: the bus, for the
// storage and lifecycle services.
package changes

import (
	"context"
	"sync"

	"pluginhost/models"
)

// Publisher receives every committed change, in storage revision order per
// Instance. Publish must not block.
type Publisher interface {
	Publish(models.StorageChange)
}

// Sink receives the changes of one Instance. Deliver is called by publishers
// and must not block.
type Sink interface {
	Deliver(models.StorageChange)
}

// Bus delivers changes to in-process sinks by Instance.
type Bus struct {
	mu   sync.RWMutex
	subs map[string]map[Sink]struct{}
	// Forward, when set, also receives every change published here, so that
	// other replicas can deliver it. It must not block.
	Forward func(models.StorageChange)
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[string]map[Sink]struct{}{}} }

// Publish delivers a change committed by this process to local subscribers and
// forwards it to other replicas.
func (b *Bus) Publish(c models.StorageChange) {
	b.Deliver(c)
	if b.Forward != nil {
		b.Forward(c)
	}
}

// Deliver hands a change to local subscribers only (changes received from
// other replicas arrive here).
func (b *Bus) Deliver(c models.StorageChange) {
	b.mu.RLock()
	for s := range b.subs[c.InstanceID] {
		s.Deliver(c)
	}
	b.mu.RUnlock()
}

// Watch sends one Instance's changes to a sink until Unwatch.
func (b *Bus) Watch(instanceID string, s Sink) {
	b.mu.Lock()
	if b.subs[instanceID] == nil {
		b.subs[instanceID] = map[Sink]struct{}{}
	}
	b.subs[instanceID][s] = struct{}{}
	b.mu.Unlock()
}

// Unwatch stops sending to a sink.
func (b *Bus) Unwatch(instanceID string, s Sink) {
	b.mu.Lock()
	if m := b.subs[instanceID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(b.subs, instanceID)
		}
	}
	b.mu.Unlock()
}

// Instances returns the Instances that have local subscribers.
func (b *Bus) Instances() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	ids := make([]string, 0, len(b.subs))
	for id := range b.subs {
		ids = append(ids, id)
	}
	return ids
}

// Subscribers returns how many local subscriptions are open.
func (b *Bus) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for _, m := range b.subs {
		n += len(m)
	}
	return n
}

// Follow streams, until ctx ends, get's answer for each key of operation op
// published on topic (a user's notifications, rendered responses), from
// every replica; a key get cannot read (gone since) is skipped. It never
// holds a publisher back: while the reader is behind, up to queue keys wait
// and older ones are dropped.
func Follow[T any](ctx context.Context, b *Bus, topic, op string, queue int, get func(ctx context.Context, key string) (T, error)) <-chan T {
	k := &keys{op: op, c: make(chan string, queue)}
	b.Watch(topic, k)
	out := make(chan T, 1)
	go func() {
		defer close(out)
		defer b.Unwatch(topic, k)
		for {
			select {
			case <-ctx.Done():
				return
			case key := <-k.c:
				v, err := get(ctx, key)
				if err != nil {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// keys is Follow's sink: the keys of one operation, the oldest dropped
// when full.
type keys struct {
	op string
	c  chan string
}

func (k *keys) Deliver(c models.StorageChange) {
	if c.Operation != k.op || c.Key == nil {
		return // a resynchronisation between replicas says nothing here
	}
	for {
		select {
		case k.c <- *c.Key:
			return
		default:
		}
		select {
		case <-k.c:
		default:
		}
	}
}
