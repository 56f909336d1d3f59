// Package changes carries committed storage changes to the subscribers that
// watch an Instance: the in-process bus, and (with Redis) across replicas.
//
// Publishing never blocks. Each subscription has a bounded queue; a subscriber
// that falls behind is not allowed to grow memory or slow anyone: once its
// queue is full, further changes are coalesced into the latest one, which it
// receives after the queued ones. A client therefore always ends on the latest
// storage revision, and a jump in revisions tells it that it missed changes.
package changes

import (
	"context"
	"sync"

	"pluginhost/models"
)

// QueueLength is how many changes a subscription holds before coalescing.
const QueueLength = 16

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

// Subscribe returns a queue of one Instance's changes, read with Next.
func (b *Bus) Subscribe(instanceID string) *Subscription {
	s := &Subscription{bus: b, instanceID: instanceID, notify: make(chan struct{}, 1), done: make(chan struct{})}
	b.Watch(instanceID, s)
	return s
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

// Subscription is a queue of one Instance's changes.
type Subscription struct {
	bus        *Bus
	instanceID string
	notify     chan struct{}
	done       chan struct{}
	closeOnce  sync.Once

	mu        sync.Mutex
	queue     []models.StorageChange
	latest    *models.StorageChange // coalesced changes past a full queue
	coalesced int
}

// Deliver queues a change; past a full queue, changes fold into the latest.
func (s *Subscription) Deliver(c models.StorageChange) {
	s.mu.Lock()
	if len(s.queue) < QueueLength && s.latest == nil {
		s.queue = append(s.queue, c)
	} else {
		if s.latest != nil {
			s.coalesced++ // the previous latest is folded into this one
		}
		s.latest = &c
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Next waits for the next change. It returns false when the subscription is
// closed or ctx ends.
func (s *Subscription) Next(ctx context.Context) (models.StorageChange, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			c := s.queue[0]
			s.queue = s.queue[1:]
			if len(s.queue) == 0 {
				s.queue = nil // let the backing array go
			}
			s.mu.Unlock()
			return c, true
		}
		if s.latest != nil {
			c := *s.latest
			s.latest = nil
			s.mu.Unlock()
			return c, true
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-s.done:
			return models.StorageChange{}, false
		case <-ctx.Done():
			return models.StorageChange{}, false
		}
	}
}

// Coalesced returns how many changes were folded into a later one because the
// subscriber fell behind.
func (s *Subscription) Coalesced() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.coalesced
}

// Done is closed when the subscription is closed.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Close ends the subscription; Next returns false from then on.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() {
		s.bus.Unwatch(s.instanceID, s)
		close(s.done)
	})
}
