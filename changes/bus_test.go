package changes

import (
	"sync"
	"testing"

	"pluginhost/models"
)

// recorder is a sink that keeps what it is given.
type recorder struct {
	mu  sync.Mutex
	got []models.StorageChange
}

func (r *recorder) Deliver(c models.StorageChange) {
	r.mu.Lock()
	r.got = append(r.got, c)
	r.mu.Unlock()
}

func change(inst string, rev int64) models.StorageChange {
	return models.StorageChange{InstanceID: inst, StorageRevision: rev, Operation: models.OpUpdate}
}

// Each sink gets the changes of the Instance it watches, in the order they
// were published, and forwarding sees every published change but none only
// delivered (received from another replica).
func TestDeliveryByInstance(t *testing.T) {
	b := NewBus()
	var forwarded []models.StorageChange
	b.Forward = func(c models.StorageChange) { forwarded = append(forwarded, c) }
	a, other := &recorder{}, &recorder{}
	b.Watch("a", a)
	b.Watch("b", other)
	for r := int64(1); r <= 5; r++ {
		b.Publish(change("a", r))
	}
	b.Deliver(change("b", 1))
	if len(a.got) != 5 || a.got[4].StorageRevision != 5 {
		t.Fatalf("a got %+v", a.got)
	}
	for i, c := range a.got {
		if c.StorageRevision != int64(i+1) {
			t.Fatalf("a got revision %d in place %d", c.StorageRevision, i)
		}
	}
	if len(other.got) != 1 || other.got[0].InstanceID != "b" {
		t.Fatalf("b got %+v", other.got)
	}
	if len(forwarded) != 5 {
		t.Fatalf("forwarded %d changes, want the 5 published", len(forwarded))
	}
	b.Unwatch("a", a)
	b.Publish(change("a", 6))
	if len(a.got) != 5 || b.Subscribers() != 1 {
		t.Fatalf("after Unwatch: %d changes, %d subscribers", len(a.got), b.Subscribers())
	}
}
