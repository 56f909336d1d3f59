package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/wasmbin"
)

const reactors = "testdata/reactors"

// A reactor's instance is kept between runs and restored to its state after
// initialization before each: a module that counts its runs in a global and
// in its heap sees 1 every time, and nothing of another Instance's run,
// whether runs follow each other or overlap.
func TestReactorFreshState(t *testing.T) {
	e := newEngine(t, Limits{PerUser: 4})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "counter"))
	if m.Kind() != wasmbin.KindReactor {
		t.Fatalf("the module is a %s", m.Kind())
	}
	atOnce(t, 4, 16, func(w, i int) error {
		j := job(m, models.Capability{}, `{}`)
		j.Request.Instance.ID = fmt.Sprintf("inst_%d_%d", w, i)
		res, _, err := e.Run(context.Background(), j)
		if err != nil {
			return err
		}
		var got struct {
			Runs   int      `json:"runs"`
			Others []string `json:"others"`
		}
		json.Unmarshal(res.Data, &got)
		if got.Runs != 1 || len(got.Others) != 0 {
			return fmt.Errorf("saw %d runs and Instances %v", got.Runs, got.Others)
		}
		return nil
	})
	e.work.Wait()
	e.mu.Lock()
	idle := len(e.idle.items)
	e.mu.Unlock()
	if idle == 0 {
		t.Error("no instance was kept for the next run")
	}
}

// A failed run of a reactor does not leave its instance for the next one.
func TestReactorFailureDropsInstance(t *testing.T) {
	e := newEngine(t, Limits{})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "echo"))
	if _, _, err := e.Run(context.Background(), job(m, models.Capability{}, `{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	// An output past the limit stops the run: its instance is closed.
	e2 := newEngine(t, Limits{OutputBytes: 64})
	m2 := compileBytes(t, e2, wasmtest.Reactor(t, reactors, "echo"))
	_, _, err := e2.Run(context.Background(), job(m2, models.Capability{}, `{"s":"`+string(make([]byte, 0))+`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`))
	if f := failure(t, err); f.Reason != models.ReasonOutputTooLarge {
		t.Fatalf("got %v", err)
	}
	e2.work.Wait()
	e2.mu.Lock()
	idle := len(e2.idle.items)
	e2.mu.Unlock()
	if idle != 0 {
		t.Errorf("%d instances kept after a failed run", idle)
	}
	if _, _, err := e2.Run(context.Background(), job(m2, models.Capability{}, `{"a":1}`)); err != nil {
		t.Fatalf("the run after a failed one: %v", err)
	}
}

// A reactor pre-initialized (its state after _initialize written into the
// module) runs as the original does, from the same state every run, and
// pre-initializing it twice gives the same bytes.
func TestPreinitialize(t *testing.T) {
	e := newEngine(t, Limits{})
	original := wasmtest.Reactor(t, reactors, "counter")
	pre, err := e.Preinitialize(context.Background(), original)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Preinitialize(context.Background(), original)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pre, again) {
		t.Fatal("two pre-initializations of one module differ")
	}
	m, _, err := wasmbin.Check(pre, wasmbin.Limits{})
	if err != nil {
		t.Fatalf("the pre-initialized module: %v", err)
	}
	if _, ok := m.Export("_initialize"); ok {
		t.Fatal("the pre-initialized module still exports _initialize")
	}
	if same, err := e.Preinitialize(context.Background(), pre); err != nil || !bytes.Equal(same, pre) {
		t.Fatalf("pre-initializing a pre-initialized module changed it: %v", err)
	}
	mod := compileBytes(t, e, pre)
	for i := range 3 {
		res, _, err := e.Run(context.Background(), job(mod, models.Capability{}, `{}`))
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Runs int }
		json.Unmarshal(res.Data, &got)
		if got.Runs != 1 {
			t.Fatalf("run %d saw %d runs", i, got.Runs)
		}
	}
	// A command cannot be.
	if _, err := e.Preinitialize(context.Background(), wasmtest.Module(t, modules, "echo")); err == nil {
		t.Fatal("a command was pre-initialized")
	}
}

// Every run of a reactor starts from the module's initial state in every
// respect, whichever user or Instance ran it before: a module that changes
// its memory, a global, its memory's size, a table's contents or size, or
// drops a segment, in each run, and traps when a run starts with the change
// already made, answers "fresh" to every run, as two users and as
// Instances of two plugins whose modules are the same bytes. Only the
// modules whose whole state the host restores keep an instance between
// runs.
func TestReactorStateIsFresh(t *testing.T) {
	e := newEngine(t, Limits{})
	runs := []struct{ user, plugin, instance string }{
		{"usr_a", "inl_a", "inst_a"},
		{"usr_b", "inl_b", "inst_b"}, // another user, another plugin's Instance
		{"usr_b", "inl_b", "inst_b"},
		{"usr_a", "inl_a", "inst_a2"}, // the first user's other Instance
	}
	for _, kind := range wasmtest.StateKinds {
		t.Run(kind, func(t *testing.T) {
			wasm := wasmtest.StateReactor(kind)
			for i, r := range runs {
				// Each plugin compiles its own copy of the bytes; the
				// engine shares the compiled module.
				m := compileBytes(t, e, bytes.Clone(wasm))
				j := job(m, models.Capability{}, `{}`)
				j.User = r.user
				j.Request.Instance = Instance{ID: r.instance, InstallationID: r.plugin, Generation: 1}
				res, _, err := e.Run(context.Background(), j)
				if err != nil {
					t.Fatalf("run %d (%s, %s): %v", i+1, r.user, r.instance, err)
				}
				if res.Summary != wasmtest.FreshSummary {
					t.Fatalf("run %d answered %q", i+1, res.Summary)
				}
			}
			e.work.Wait()
			e.mu.Lock()
			kept := e.idle.takeAll()
			e.mu.Unlock()
			for _, in := range kept {
				in.close()
			}
			switch {
			case !wasmtest.Restorable(kind) && len(kept) > 0:
				t.Errorf("%d instances were kept of a module whose state the host does not restore", len(kept))
			case kind != "memory.grow" && wasmtest.Restorable(kind) && len(kept) == 0:
				t.Error("no instance was kept of a module whose state the host restores")
			}
		})
	}
}

// Runs one after another share one instance: each run's instance is
// restored after it answers, and the next run waits for that rather than
// making another.
func TestSequentialRunsShareOneInstance(t *testing.T) {
	e := newEngine(t, Limits{})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "echo"))
	for i := range 50 {
		if _, _, err := e.Run(context.Background(), job(m, models.Capability{}, fmt.Sprintf(`{"run":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	e.work.Wait()
	e.mu.Lock()
	idle := len(e.idle.items)
	e.mu.Unlock()
	if idle != 1 {
		t.Errorf("50 runs one after another left %d instances, want 1", idle)
	}
}

// A run of a Go reactor that allocates within the heap's free room the kit
// leaves at initialization keeps its instance for the next run. One that
// allocates past it grows the memory, which no restore can undo: its
// instance is replaced, after the run answered, by a new one in the image's
// state, so that the next run finds one ready. Either way every run starts
// afresh, one run at a time or four at once.
func TestRunsThatAllocate(t *testing.T) {
	e := newEngine(t, Limits{PerUser: 4})
	m := compileBytes(t, e, wasmtest.Reactor(t, reactors, "alloc"))
	run := func(kib int, instance string) error {
		j := job(m, models.Capability{}, fmt.Sprintf(`{"kib":%d}`, kib))
		j.Request.Instance.ID = instance
		res, _, err := e.Run(context.Background(), j)
		if err != nil {
			return err
		}
		var got struct{ KiB, Runs int }
		json.Unmarshal(res.Data, &got)
		if got.KiB != kib || got.Runs != 1 {
			return fmt.Errorf("allocated %d KiB and saw %d runs, want %d and 1", got.KiB, got.Runs, kib)
		}
		return nil
	}
	for _, tt := range []struct {
		name     string
		kib      int
		kept     bool
		replaced int64 // instances replaced in the three runs
	}{
		{"within the kit's room", 768, true, 0},
		{"past it", 4096, false, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var last *instance
			replaced := e.Stats().Replaced
			for i := range 3 {
				if err := run(tt.kib, "inst_1"); err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				e.work.Wait()
				e.mu.Lock()
				idle := slices.Clone(e.idle.items)
				e.mu.Unlock()
				if len(idle) != 1 {
					t.Fatalf("after run %d, %d instances are ready, want 1", i, len(idle))
				}
				if last != nil && (idle[0] == last) != tt.kept {
					t.Errorf("after run %d, the instance was kept: %v, want %v", i, idle[0] == last, tt.kept)
				}
				last = idle[0]
			}
			if got := e.Stats().Replaced - replaced; got != tt.replaced {
				t.Errorf("%d instances replaced, want %d", got, tt.replaced)
			}
		})
	}
	t.Run("past it, four at once", func(t *testing.T) {
		replaced := e.Stats().Replaced
		atOnce(t, 4, 4, func(w, i int) error { return run(4096, fmt.Sprintf("inst_%d", w)) })
		e.work.Wait()
		if s := e.Stats(); s.Replaced == replaced || s.Ready == 0 {
			t.Errorf("after 16 runs that grew the memory: %d instances replaced, %d ready", s.Replaced-replaced, s.Ready)
		}
	})
}

// atOnce runs workers goroutines, each calling f with its number and the
// run's, runs times or until f fails, and reports each failure.
func atOnce(t *testing.T, workers, runs int, f func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range runs {
				if err := f(w, i); err != nil {
					errs <- fmt.Errorf("run %d of worker %d: %v", i, w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
