package sandbox

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// An instance that maps its image's file is restored by looking only at the
// pages it wrote: whatever a run writes, and wherever, the memory is the
// image again afterwards; when it wrote more than half of the pages, restore
// says so and the file is mapped again. One buffer of the pages' entries
// serves every restore.
func TestImageFileRestoresWrittenPages(t *testing.T) {
	const pages = 64
	img := make([]byte, pages*pageBytes)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img {
		img[i] = byte(rng.Uint32())
	}
	f := newImageFile(img)
	if f == nil {
		testenv.Missing(t, "a memory file and /proc/self/pagemap")
	}
	defer f.close()
	region := reserve(uint64(2 * len(img))) // memory past the image stays the instance's
	defer release(region)
	mem := region[:len(img)]
	if !f.mapOnto(mem) || !bytes.Equal(mem, img) {
		t.Fatal("the mapped file does not hold the image")
	}
	tests := []struct {
		name  string
		write func(mem []byte)
		ok    bool
	}{
		{"nothing written", func([]byte) {}, true},
		{"one byte", func(m []byte) { m[3*pageBytes+17]++ }, true},
		{"the first and the last byte", func(m []byte) { m[0]++; m[len(m)-1]++ }, true},
		{"a page written with what it held", func(m []byte) { copy(m[5*pageBytes:6*pageBytes], img[5*pageBytes:6*pageBytes]) }, true},
		{"a run across pages", func(m []byte) { clear(m[10*pageBytes-100 : 14*pageBytes+100]) }, true},
		{"pages written by an earlier run, written again", func(m []byte) { m[3*pageBytes]++; m[11*pageBytes+1]++ }, true},
		{"more than half of the pages", func(m []byte) { clear(m[:pages/2*pageBytes+1]) }, false},
	}
	entries := make([]byte, 8) // too short: grown, then kept from case to case
	for _, tt := range tests {
		tt.write(mem)
		ok := f.restoreOwnPages(mem, img, &entries)
		if ok != tt.ok {
			t.Fatalf("%s: restoreOwnPages = %v, want %v", tt.name, ok, tt.ok)
		}
		if !ok && !f.mapOnto(mem) {
			t.Fatalf("%s: the file could not be mapped again", tt.name)
		}
		if !bytes.Equal(mem, img) {
			t.Fatalf("%s: the memory is not the image after restore", tt.name)
		}
	}
	if f.restoreOwnPages(mem[:len(mem)-pageBytes], img[:len(img)-pageBytes], &entries) || f.mapOnto(mem[1:]) {
		t.Error("a memory of another size than the image's, or not at a page, was taken")
	}
}

// Runs of a reactor after the first restore its instance through the
// image's file on Linux: the instance kept maps it, and every run still
// starts from the image.
func TestReactorInstanceMapsImage(t *testing.T) {
	if pm := openPagemap(); pm == nil {
		testenv.Missing(t, "/proc/self/pagemap")
	}
	e := newEngine(t, Limits{})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "counter"))
	for i := range 20 {
		res, _, err := e.Run(context.Background(), job(m, models.Capability{}, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary != "run 1" {
			t.Fatalf("run %d answered %q", i+1, res.Summary)
		}
	}
	e.work.Wait()
	e.mu.Lock()
	kept := e.idle.takeAll()
	e.mu.Unlock()
	if len(kept) != 1 || !kept[0].mapped {
		t.Errorf("kept %d instances, the first mapping its image: %v", len(kept), len(kept) > 0 && kept[0].mapped)
	}
	for _, in := range kept {
		in.close()
	}
}

// RestoreMode tells what the engine does on this system: "written pages"
// exactly when an image gets a memory file.
func TestRestoreModeIsWhatImagesGet(t *testing.T) {
	mode, why := RestoreMode()
	f := newImageFile(make([]byte, 4*pageBytes))
	if f != nil {
		defer f.close()
	}
	if (mode == "written pages") != (f != nil) || why == "" {
		t.Fatalf("RestoreMode() = %q (%s), but an image gets a memory file: %v", mode, why, f != nil)
	}
}
