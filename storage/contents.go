package storage

import (
	"context"
	"sync"
	"unsafe"

	"pluginhost/access"
	"pluginhost/bytecache"
	"pluginhost/models"
)

// A run reads its Instance's whole storage (ContentsOf). The contents of an
// Instance change only with its storage revision, which every change of its
// items raises in the change's own transaction (see package database,
// "Storage revision"), and with its Installation's generation; the access
// gate gives both, as the database has them, on every run (read, or kept
// while no transaction has committed since: access.Gate.Read). (Deleting
// an Instance deletes its items without raising it, but the Instance is
// gone, and ids are never used again.) So the contents read for one (Installation,
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
	once sync.Once
	kept *bytecache.Cache[*Snapshot] // by Instance; shared: never changed once kept
}

func (c *contentsCache) cache() *bytecache.Cache[*Snapshot] {
	c.once.Do(func() {
		c.kept = bytecache.New(maxKeptContentsBytes, maxKeptInstanceContents, func(_ string, s *Snapshot) int64 { return contentsBytes(s) })
	})
	return c.kept
}

// get returns the contents kept of the target's Instance, if they were read
// at the Installation, generation and storage revision the gate read.
func (c *contentsCache) get(t *access.Target) *Snapshot {
	s, ok := c.cache().Get(context.Background(), t.Instance.ID)
	if !ok || s.InstallationID != t.Installation.ID || s.Generation != t.Installation.Generation || s.StorageRevision != t.Instance.StorageRevision {
		return nil
	}
	return s
}

// keep keeps snap, read at its storage revision, in place of what was kept
// of its Instance, unless that was read later (a run that read before
// another may end after it).
func (c *contentsCache) keep(snap *Snapshot) {
	c.cache().Put(snap.InstanceID, snap, func(kept *Snapshot) bool {
		return kept.InstallationID == snap.InstallationID &&
			(kept.Generation > snap.Generation || kept.Generation == snap.Generation && kept.StorageRevision > snap.StorageRevision)
	})
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
