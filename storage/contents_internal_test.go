package storage

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"pluginhost/access"
	"pluginhost/models"
)

// contentsOfSize is an Instance's contents of about n bytes, at a revision.
func contentsOfSize(instance string, revision int64, n int) *Snapshot {
	return &Snapshot{InstanceID: instance, InstallationID: "instl", Generation: 1, StorageRevision: revision,
		Namespaces: []SnapshotNamespace{{ID: "notes", Items: []models.ItemJSON{{Key: "k", Value: models.JSON(`"` + strings.Repeat("x", n) + `"`)}}}}}
}

func targetOf(instance, installation string, generation, revision int64) *access.Target {
	return &access.Target{Instance: &models.Instance{ID: instance, StorageRevision: revision},
		Installation: &models.Installation{ID: installation, Generation: generation}}
}

// TestKeptContentsMatchTheGate: kept contents serve a run only at the
// Installation, generation and storage revision they were read at.
func TestKeptContentsMatchTheGate(t *testing.T) {
	var c contentsCache
	kept := contentsOfSize("inst", 7, 10)
	c.keep(kept)
	for _, tc := range []struct {
		name   string
		target *access.Target
		hit    bool
	}{
		{"the same", targetOf("inst", "instl", 1, 7), true},
		{"a later revision", targetOf("inst", "instl", 1, 8), false},
		{"an earlier revision", targetOf("inst", "instl", 1, 6), false},
		{"another generation", targetOf("inst", "instl", 2, 7), false},
		{"another Installation", targetOf("inst", "other", 1, 7), false},
		{"another Instance", targetOf("other", "instl", 1, 7), false},
	} {
		if got := c.get(tc.target); (got == kept) != tc.hit || (got != nil && got != kept) {
			t.Errorf("%s: got %p, want kept %v", tc.name, got, tc.hit)
		}
	}
}

// TestKeptContentsAreBounded: the contents kept stay within their bound,
// the least recently used going first; an Instance past its own bound is not
// kept, and what was kept of it is dropped.
func TestKeptContentsAreBounded(t *testing.T) {
	var c contentsCache
	const each = 1 << 20
	name := func(i int) string { return fmt.Sprintf("inst-%03d", i) }
	fit := int(maxKeptContentsBytes / contentsBytes(contentsOfSize(name(0), 1, each)))
	for i := range fit + 4 {
		if i == fit { // the first one used again: the second goes first
			if c.get(targetOf(name(0), "instl", 1, 1)) == nil {
				t.Fatalf("%d Instances of %d bytes were not all kept", fit, each)
			}
		}
		c.keep(contentsOfSize(name(i), 1, each))
		if got := c.cache().Bytes(); got > maxKeptContentsBytes {
			t.Fatalf("after %d kept: %d bytes, bound %d", i+1, got, maxKeptContentsBytes)
		}
	}
	for _, tc := range []struct {
		i    int
		kept bool
	}{{0, true}, {1, false}, {4, false}, {5, true}, {fit + 3, true}} {
		if got := c.get(targetOf(name(tc.i), "instl", 1, 1)) != nil; got != tc.kept {
			t.Errorf("%s kept %v, want %v", name(tc.i), got, tc.kept)
		}
	}

	// At an Instance's bound and one past it: the longest value whose
	// contents fit, and one byte more.
	at := sort.Search(maxKeptInstanceContents, func(n int) bool {
		return contentsBytes(contentsOfSize("big", 1, n+1)) > maxKeptInstanceContents
	})
	c.keep(contentsOfSize("big", 1, at))
	if c.get(targetOf("big", "instl", 1, 1)) == nil {
		t.Error("contents at the bound of one Instance were not kept")
	}
	c.keep(contentsOfSize("big", 2, at+1))
	if c.get(targetOf("big", "instl", 1, 2)) != nil || c.get(targetOf("big", "instl", 1, 1)) != nil {
		t.Error("contents one byte past the bound of one Instance were kept, or its older ones were")
	}
	if got := c.cache().Bytes(); got > maxKeptContentsBytes-contentsBytes(contentsOfSize("big", 1, at)) {
		t.Errorf("%d bytes kept after the Instance past its bound was dropped: it still counts", got)
	}
}

// TestKeptContentsStayTheLatest: contents read earlier do not replace those
// read later, whichever run ends last; a new generation or Installation
// replaces them.
func TestKeptContentsStayTheLatest(t *testing.T) {
	at := func(installation string, generation, revision int64) *Snapshot {
		s := contentsOfSize("inst", revision, 10)
		s.InstallationID, s.Generation = installation, generation
		return s
	}
	for _, tc := range []struct {
		name        string
		first, then *Snapshot
		latest      *access.Target
	}{
		{"a later revision", at("instl", 1, 7), at("instl", 1, 8), targetOf("inst", "instl", 1, 8)},
		{"an earlier revision", at("instl", 1, 7), at("instl", 1, 6), targetOf("inst", "instl", 1, 7)},
		{"a later generation", at("instl", 1, 7), at("instl", 2, 8), targetOf("inst", "instl", 2, 8)},
		{"an earlier generation", at("instl", 2, 8), at("instl", 1, 9), targetOf("inst", "instl", 2, 8)},
		{"another Installation", at("instl", 3, 9), at("other", 1, 1), targetOf("inst", "other", 1, 1)},
	} {
		var c contentsCache
		c.keep(tc.first)
		c.keep(tc.then)
		if c.get(tc.latest) == nil {
			t.Errorf("%s: the latest contents are not kept", tc.name)
		}
		if n := c.cache().Len(); n != 1 {
			t.Errorf("%s: %d entries kept for one Instance", tc.name, n)
		}
	}
}

// TestKeptContentsUnderParallelRuns: runs of several Instances keep and
// find contents at once (run with -race).
func TestKeptContentsUnderParallelRuns(t *testing.T) {
	var c contentsCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				inst := fmt.Sprint("inst-", (g+i)%5)
				rev := int64(i % 7)
				if got := c.get(targetOf(inst, "instl", 1, rev)); got != nil && (got.InstanceID != inst || got.StorageRevision != rev) {
					t.Errorf("asked for %s at %d, got %s at %d", inst, rev, got.InstanceID, got.StorageRevision)
					return
				}
				c.keep(contentsOfSize(inst, rev, 100))
			}
		}()
	}
	wg.Wait()
	if n := c.cache().Len(); n > 5 {
		t.Errorf("%d Instances kept, of 5", n)
	}
}
