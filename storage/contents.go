package storage

import (
	"container/list"
	"sync"
	"unsafe"

	"pluginhost/access"
	"pluginhost/models"
)

// A run reads its Instance's whole storage (ContentsOf). The contents of an
// Instance change only with its storage revision, which every change of its
// items raises in the change's own transaction (see package database,
// "Storage revision"), and with its Installation's generation; the access
// gate reads both, from the database, on every run. (Deleting an Instance
// deletes its items without raising it, but the Instance is gone, and ids
// are never used again.) So the contents read for one (Installation,
// generation, storage revision) are the contents at that revision wherever
// the gate finds it, and a run that finds them kept need not read them
// again. Nothing is invalidated: a change anywhere in the fleet raises the
// revision in the database the gate reads, and the kept contents stop
// matching. The revision a snapshot is kept at is the one read with its
// items, in the same statement.

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
// of its Instance, unless that was read later (a run that read before
// another may end after it); the least recently used go past the bound.
func (c *contentsCache) keep(snap *Snapshot) {
	n := contentsBytes(snap)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[snap.InstanceID]; ok {
		if kept := e.Value.(*keptContents).snap; kept.InstallationID == snap.InstallationID &&
			(kept.Generation > snap.Generation || kept.Generation == snap.Generation && kept.StorageRevision > snap.StorageRevision) {
			return
		}
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

// contentsBytes is about the memory a snapshot holds: its structures at
// their capacity, and each key and value with what the allocator rounds it
// up to (up to an eighth more, and at least 16 bytes).
func contentsBytes(s *Snapshot) int64 {
	n := int64(unsafe.Sizeof(*s)) + int64(cap(s.Namespaces))*int64(unsafe.Sizeof(SnapshotNamespace{})) +
		allocBytes(len(s.InstanceID)) + allocBytes(len(s.InstallationID))
	for _, ns := range s.Namespaces {
		n += allocBytes(len(ns.ID)) + allocBytes(len(ns.AIAccess)) + int64(cap(ns.Items))*int64(unsafe.Sizeof(models.ItemJSON{}))
		for _, it := range ns.Items {
			n += allocBytes(len(it.Key)) + allocBytes(len(it.Value))
		}
	}
	return n
}

func allocBytes(n int) int64 { return int64(max(16, n+n/8)) }
