package storage

import (
	"container/list"
	"sync"

	"pluginhost/access"
)

// A run reads its Instance's whole storage (ContentsOf). The contents of an
// Instance change only with its storage revision, which every change of its
// items raises in the change's own transaction, and with its Installation's
// generation; the access gate reads both, from the database, on every run.
// So the contents read for one (Installation, generation, storage revision)
// are the contents at that revision wherever the gate finds it, and a run
// that finds them kept need not read them again. Nothing is invalidated: a
// change anywhere in the fleet raises the revision in the database the gate
// reads, and the kept contents stop matching.

// Bounds of the contents kept: their bytes in all, and one Instance's
// contents at most (an Instance larger is read every time).
const (
	maxKeptContentsBytes    = 16 << 20
	maxKeptInstanceContents = 2 << 20
)

// contentsCache keeps the latest contents read of the Instances most
// recently run, within maxKeptContentsBytes. Its zero value is empty.
type contentsCache struct {
	mu    sync.Mutex
	bytes int64
	order list.List                // of *keptContents, most recently used first
	byID  map[string]*list.Element // by Instance
}

// keptContents is an Instance's contents as read at one storage revision.
type keptContents struct {
	snap  *Snapshot // shared: never changed once kept
	bytes int64
}

// get returns the contents kept of the target's Instance, if they were read
// at the Installation, generation and storage revision the gate read.
func (c *contentsCache) get(t *access.Target) *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[t.Instance.ID]
	if !ok {
		return nil
	}
	k := e.Value.(*keptContents)
	if s := k.snap; s.InstallationID != t.Installation.ID || s.Generation != t.Installation.Generation || s.StorageRevision != t.Instance.StorageRevision {
		return nil
	}
	c.order.MoveToFront(e)
	return k.snap
}

// keep keeps snap, read at its storage revision, in place of what was kept
// of its Instance; the least recently used go past the bound.
func (c *contentsCache) keep(snap *Snapshot) {
	n := contentsBytes(snap)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[snap.InstanceID]; ok {
		c.remove(e)
	}
	if n > maxKeptInstanceContents {
		return
	}
	if c.byID == nil {
		c.byID = map[string]*list.Element{}
	}
	c.byID[snap.InstanceID] = c.order.PushFront(&keptContents{snap: snap, bytes: n})
	c.bytes += n
	for c.bytes > maxKeptContentsBytes {
		c.remove(c.order.Back())
	}
}

func (c *contentsCache) remove(e *list.Element) {
	k := c.order.Remove(e).(*keptContents)
	delete(c.byID, k.snap.InstanceID)
	c.bytes -= k.bytes
}

// contentsBytes is about the memory a snapshot holds.
func contentsBytes(s *Snapshot) int64 {
	n := int64(256 + len(s.InstanceID) + len(s.InstallationID))
	for _, ns := range s.Namespaces {
		n += int64(96 + len(ns.ID) + len(ns.AIAccess))
		for _, it := range ns.Items {
			n += int64(64 + len(it.Key) + len(it.Value))
		}
	}
	return n
}
