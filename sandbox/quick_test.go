package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// holdCompiles takes every compilation slot of the engine, so that a
// compilation begun stays under way until release is called.
func holdCompiles(e *Engine) (release func()) {
	for range cap(e.compiles) {
		e.compiles <- struct{}{}
	}
	return func() {
		for range cap(e.compiles) {
			<-e.compiles
		}
	}
}

func sumOf(wasm []byte) string {
	s := sha256.Sum256(wasm)
	return hex.EncodeToString(s[:])
}

func bytesOf(wasm []byte) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { return wasm, nil }
}

// While a module's compilation is under way, Quick runs it at once in the
// interpreter, with the same answer and the same limits, each run from a
// clean state; once it is compiled, Quick answers the compiled module and
// the interpreted one is dropped.
func TestQuick(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, t.TempDir(), Limits{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	echo := wasmtest.Module(t, modules, "echo")
	release := holdCompiles(e)

	m, err := e.Quick(ctx, sumOf(echo), bytesOf(echo))
	if err != nil {
		t.Fatal(err)
	}
	if m.rt == nil || m.rt != e.interp {
		t.Fatal("a module being compiled was not given to the interpreter")
	}
	res, _, err := e.Run(ctx, job(m, models.Capability{}, `{"count":3}`))
	if err != nil || string(res.Data) != `{"count":3}` {
		t.Fatalf("the interpreted echo answered %+v, %v", res, err)
	}
	again, _ := e.Quick(ctx, sumOf(echo), bytesOf(nil))
	if again != m {
		t.Fatal("a second Quick made another interpreted module")
	}
	e.Release(again)

	loop := wasmtest.Module(t, modules, "loop")
	lm, err := e.Quick(ctx, sumOf(loop), bytesOf(loop))
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	_, _, err = e.Run(ctx, job(lm, models.Capability{}, `{}`))
	if f := failure(t, err); f.Reason != models.ReasonTimeout || time.Since(begun) > 2*time.Second+500*time.Millisecond {
		t.Fatalf("an interpreted endless loop ended %s after %v", f.Reason, time.Since(begun))
	}
	e.Release(lm)

	if _, err := e.Quick(ctx, sumOf(wasmtest.Invalid()), bytesOf(wasmtest.Invalid())); err == nil {
		t.Fatal("an invalid module was made ready")
	}
	if _, err := e.Quick(ctx, sumOf(append([]byte("x"), loop...)), bytesOf(loop)); err == nil {
		t.Fatal("bytes that are not the sum's were run")
	}

	release()
	compiled, err := e.Compile(ctx, echo)
	if err != nil {
		t.Fatal(err)
	}
	now, err := e.Quick(ctx, sumOf(echo), bytesOf(nil))
	if err != nil || now != compiled || now.rt != nil {
		t.Fatalf("once compiled Quick answered %p (%v), want the compiled %p", now, err, compiled)
	}
	e.Release(now)
	e.Release(compiled)
	e.Release(m)
	e.mu.Lock()
	_, kept := e.quick[m.sum]
	e.mu.Unlock()
	if kept || !m.evicted {
		t.Fatal("the interpreted module was kept after the compiled one was ready")
	}
}

// An interpreted reactor has its first instance made with it, for its
// first run, and runs every time from its state after initialization, as a
// compiled one does.
func TestQuickReactorStartsClean(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, t.TempDir(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	reactor := wasmtest.C(t, "testdata/c/notes.c", true)
	release := holdCompiles(e)
	defer release()
	m, err := e.Quick(ctx, sumOf(reactor), bytesOf(reactor))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release(m)
	for deadline := time.Now().Add(time.Minute); e.Stats().Ready != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no instance of the interpreted reactor was made ready for its first run")
		}
	}
	for i := range 3 {
		j := job(m, models.Capability{}, `{}`)
		j.Request.Instance.ID = fmt.Sprint("inst_q_", i)
		res, _, err := e.Run(ctx, j)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Runs    int
			Earlier string `json:"earlier_instance"`
		}
		json.Unmarshal(res.Data, &got)
		if got.Runs != 1 || got.Earlier != "" {
			t.Fatalf("run %d saw %+v; want 1 run and no earlier Instance", i+1, got)
		}
	}
}

// A module Quick made ready begins its compilation only once it has been
// ready for the delay; forgotten before, it is not compiled, and its
// interpreted module is dropped.
func TestQuickCompilesLater(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, t.TempDir(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	echo := wasmtest.Module(t, modules, "echo")

	e.quickDelay = time.Hour
	m, err := e.Quick(ctx, sumOf(echo), bytesOf(echo))
	if err != nil {
		t.Fatal(err)
	}
	e.Release(m)
	if s := e.Stats(); s.Compiling != 0 || s.Compiled != 0 {
		t.Fatalf("a module Quick made ready began its compilation at once: %+v", s)
	}
	e.Forget(sumOf(echo))
	e.mu.Lock()
	_, deferred := e.deferred[m.sum]
	_, kept := e.quick[m.sum]
	evicted := m.evicted
	e.mu.Unlock()
	if deferred || kept || !evicted {
		t.Fatalf("a forgotten module is still to be compiled (%v) or kept (%v)", deferred, kept)
	}
	if s := e.Stats(); s.Compiling != 0 || s.Compiled != 0 {
		t.Fatalf("a forgotten module was compiled: %+v", s)
	}

	e.quickDelay = time.Millisecond
	m, err = e.Quick(ctx, sumOf(echo), bytesOf(echo))
	if err != nil || m.rt == nil {
		t.Fatalf("Quick answered %v, %v; want the interpreted module made again", m, err)
	}
	e.Release(m)
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		now, err := e.Quick(ctx, sumOf(echo), bytesOf(nil))
		if err != nil {
			t.Fatal(err)
		}
		compiled := now.rt == nil
		e.Release(now)
		if compiled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the module was not compiled after the delay")
		}
	}
}

// Close waits for what runs on the engine's runtimes, and ends it first: a
// reactor's first instance being made in the background and a run under
// way end, their memory is given back, and no run or pre-initialization
// starts afterwards. (A runtime closed under running code freed memory the
// code still wrote: the race detector saw it, and the process could crash.)
func TestCloseEndsAndWaitsForRuns(t *testing.T) {
	ctx := context.Background()
	reactor := wasmtest.Reactor(t, "testdata/reactors", "counter")
	loop := wasmtest.Module(t, modules, "loop")
	for i := range 4 {
		e, err := New(ctx, t.TempDir(), Limits{Timeout: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.Quick(ctx, sumOf(reactor), bytesOf(reactor))
		if err != nil {
			t.Fatal(err)
		}
		e.Release(m)
		lm, err := e.Quick(ctx, sumOf(loop), bytesOf(loop))
		if err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() {
			_, _, err := e.Run(ctx, job(lm, models.Capability{}, `{}`))
			ended <- err
		}()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			e.mu.Lock()
			running := len(e.running)
			e.mu.Unlock()
			if running > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the endless loop never began")
			}
		}
		time.Sleep(time.Duration(i) * 5 * time.Millisecond) // the first instance at several points
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-ended; !errors.Is(err, ErrClosed) {
			t.Fatalf("a run under way when the engine closed ended with %v, want %v", err, ErrClosed)
		}
		e.Release(lm)
		if used := e.MemoryInUse(); used != 0 {
			t.Fatalf("%d bytes of the memory of runs are still held after Close", used)
		}
		if _, _, err := e.Run(ctx, job(lm, models.Capability{}, `{}`)); !errors.Is(err, ErrClosed) {
			t.Fatalf("a run on a closed engine answered %v, want %v", err, ErrClosed)
		}
		if _, err := e.Preinitialize(ctx, reactor); !errors.Is(err, ErrClosed) {
			t.Fatalf("a pre-initialization on a closed engine answered %v, want %v", err, ErrClosed)
		}
	}
}
