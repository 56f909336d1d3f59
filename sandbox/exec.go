package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"pluginhost/models"
	"pluginhost/wasmbin"
)

// Output is what a run that ended well wrote.
type Output struct {
	Stdout []byte
	Stderr []byte
}

// exec runs a module once, in this order:
//  1. a run slot overall, for the user and for the Instance, within the
//     queue wait;
//  2. the run's stack charged to the memory of all runs;
//  3. an instance in the module's initial state: for a command, a fresh
//     one; for a reactor whose whole state the host can restore
//     (wasmbin.Facts.Restorable), one kept from an earlier run or a new
//     one, in both cases in the state its image holds (its state after
//     initialization); for any other reactor, a fresh one, initialized
//     anew. So every run starts from the same state and sees nothing of
//     another run, of any user or Instance;
//  4. the entry called within the wall time, on the request as standard
//     input and bounded standard output and error;
//  5. how it ended, most specific cause first; a restorable reactor's
//     instance that ended well is restored to its image and kept for the
//     next run; every other instance is closed.
//
// A failure is a CAPABILITY_FAILED error with its reason; the standard error
// kept so far is returned with it.
func (e *Engine) exec(ctx context.Context, m *Module, user, instanceID string, background bool, deadline time.Time, stdin []byte) (*Output, error) {
	l := e.limits
	if !e.begin() {
		return nil, ErrClosed
	}
	defer e.work.Done()

	// 1. A slot.
	release, err := e.acquire(ctx, user, instanceID, background)
	if err != nil {
		return nil, err
	}
	defer release()

	// 2. The stack: the engine grows it as calls nest, up to the bound the
	// instrumentation keeps.
	if !e.budget.take(stackReserve(l)) {
		return nil, starved(l)
	}
	defer e.budget.give(stackReserve(l))

	if deadline.IsZero() {
		deadline = time.Now().Add(l.Timeout)
	}
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	defer context.AfterFunc(e.life, cancel)() // Close ends it
	stdout := &boundedWriter{max: l.OutputBytes, overflow: cancel}
	stderr := &boundedWriter{max: l.StderrBytes}

	// 3. The instance.
	in, err := e.instanceFor(runCtx, m, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return &Output{Stderr: stderr.bytes()}, ctx.Err()
		}
		return &Output{Stderr: stderr.bytes()}, err
	}

	// 4. The run.
	in.io.in.Reset(stdin)
	in.io.out, in.io.err, in.io.ctx = stdout, stderr, runCtx
	err = in.call(runCtx, in.entry)

	// 5. How it ended.
	err = e.outcome(ctx, runCtx, in, stdout, err)
	if err == nil && m.reusable() && !in.mod.IsClosed() {
		e.restoreLater(in)
	} else {
		in.close()
	}
	if err != nil {
		return &Output{Stderr: stderr.bytes()}, err
	}
	return &Output{Stdout: stdout.bytes(), Stderr: stderr.bytes()}, nil
}

// reusable reports whether an instance of the module can be kept between
// runs: it is a reactor, and its code changes no state but its memory and
// globals, which restore writes back whole. A reactor that changes a table
// or drops a segment holds state restore does not reach; each of its runs
// has a fresh instance.
func (m *Module) reusable() bool {
	return m.facts.Kind == wasmbin.KindReactor && m.facts.Restorable
}

// instanceFor returns an instance of the module ready to run. For a
// reusable reactor: an idle one when there is one; otherwise a new one,
// which the first of the module's instances initializes (its _initialize,
// within the run's limits) and whose state becomes the module's image, and
// which later ones take from that image. For any other reactor: a new one,
// initialized. For a command: a new one.
func (e *Engine) instanceFor(ctx context.Context, m *Module, stderr *boundedWriter) (*instance, error) {
	if m.reusable() {
		e.mu.Lock()
		in := e.idle.take(m)
		for in == nil && m.restoring > 0 {
			e.restored.Wait()
			in = e.idle.take(m)
		}
		e.mu.Unlock()
		if in != nil {
			return in, nil
		}
	}
	in, err := e.newInstance(ctx, m)
	if err != nil {
		return nil, err
	}
	if m.facts.Kind != wasmbin.KindReactor {
		return in, nil
	}
	if !m.reusable() {
		if err := e.initialize(ctx, in, stderr); err != nil {
			in.close()
			return nil, err
		}
		return in, nil
	}
	m.imageOnce.Lock()
	defer m.imageOnce.Unlock()
	if m.image != nil {
		if !in.restore(m.image) {
			err := memoryError(e.limits, in.mem)
			in.close()
			return nil, err
		}
		return in, nil
	}
	if err := e.initialize(ctx, in, stderr); err != nil {
		in.close()
		return nil, err
	}
	m.image = in.takeImage()
	return in, nil
}

// initialize calls a new reactor instance's _initialize, if it exports
// one, within the run's limits.
func (e *Engine) initialize(ctx context.Context, in *instance, stderr *boundedWriter) error {
	ini := in.mod.ExportedFunction("_initialize")
	if ini == nil {
		return nil
	}
	discard := &boundedWriter{max: e.limits.OutputBytes}
	in.io.out, in.io.err, in.io.ctx = discard, stderr, ctx
	err := in.call(ctx, ini)
	if err := e.outcome(ctx, ctx, in, discard, err); err != nil {
		if e, ok := err.(*models.Error); ok {
			e.Message = "initializing the module: " + e.Message
		}
		return err
	}
	return nil
}

// keep puts a reactor's instance, ready for a run, among the idle ones.
func (e *Engine) keep(in *instance) {
	e.mu.Lock()
	victims := e.keepLocked(in)
	e.mu.Unlock()
	for _, v := range victims {
		v.close()
	}
}

// keepLocked puts a reactor's instance among the idle ones and returns the
// instances to close: the oldest idle ones beyond Limits.ReadyBytes, or the
// instance itself when the engine or its module is done.
func (e *Engine) keepLocked(in *instance) []*instance {
	in.io.out, in.io.err, in.io.ctx = nil, nil, nil
	if e.closed || in.m.evicted {
		return []*instance{in}
	}
	e.idle.push(in)
	var victims []*instance
	for e.idle.bytes > e.limits.ReadyBytes {
		victims = append(victims, e.idle.takeOldest())
	}
	return victims
}

// restoreLater restores a reactor's instance that ran well to the module's
// image once its run has answered, and keeps it among the idle ones,
// closing the oldest idle instances beyond Limits.ReadyBytes. A run of the
// module that comes meanwhile waits for it (instanceFor) rather than making
// another: a restore takes a fraction of a millisecond, an instance more.
// An instance whose run grew its memory cannot be restored (a memory never
// shrinks): it is closed, and a new instance in the image's state made in
// its place, here rather than in the next run (several milliseconds for a
// module of Go).
func (e *Engine) restoreLater(in *instance) {
	m := in.m
	e.mu.Lock()
	if !e.beginLocked() {
		e.mu.Unlock()
		in.close()
		return
	}
	m.refs++
	m.restoring++
	e.mu.Unlock()
	go func() {
		defer e.work.Done()
		defer e.Release(m)
		if in.grew(m.image) {
			in.close()
			in = e.replacement(m)
		} else if !in.restore(m.image) {
			in.close()
			in = nil
		}
		var victims []*instance
		e.mu.Lock()
		m.restoring--
		if in != nil {
			victims = e.keepLocked(in)
		}
		e.restored.Broadcast()
		e.mu.Unlock()
		for _, v := range victims {
			v.close()
		}
	}()
}

// replacement makes a new instance of a reactor in its image's state, for
// one whose run grew its memory; nil when it cannot (the engine is
// closing, or the memory of all runs is short) or need not (the module is
// evicted: no instance of it is kept).
func (e *Engine) replacement(m *Module) *instance {
	e.mu.Lock()
	done := e.closed || m.evicted
	e.mu.Unlock()
	if done {
		return nil
	}
	in, err := e.newInstance(e.life, m)
	if err != nil {
		return nil
	}
	if !in.restore(m.image) {
		in.close()
		return nil
	}
	e.replaced.Add(1)
	return in
}

// begin counts work on the engine's runtimes that Close must wait for,
// and reports false, counting nothing, when the engine is closed.
func (e *Engine) begin() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.beginLocked()
}

// beginLocked is begin with e.mu held.
func (e *Engine) beginLocked() bool {
	if e.closed {
		return false
	}
	e.work.Add(1)
	return true
}

// outcome says how a call of the instance ended: nil when it ended well
// (returned, or exited with code 0), or its CAPABILITY_FAILED error, most
// specific cause first. ctx is the caller's, runCtx the run's.
func (e *Engine) outcome(ctx, runCtx context.Context, in *instance, stdout *boundedWriter, err error) error {
	l := e.limits
	exitCode := uint32(0)
	var exitErr *sys.ExitError
	if errors.As(err, &exitErr) {
		exitCode = exitErr.ExitCode()
		err = nil
	}
	var c *crash
	switch {
	case stdout.over.Load():
		return models.CapabilityFailed(models.ReasonOutputTooLarge, "the module wrote more than %d bytes to standard output", l.OutputBytes)
	case in.mem != nil && (in.mem.exceeded.Load() || in.mem.starved.Load()):
		return memoryError(l, in.mem)
	case err != nil && in.stackExceeded():
		return models.CapabilityFailed(models.ReasonMemory, "the module's call stack passed its limit of %d bytes (calls nested too deeply)", l.StackBytes)
	case ctx.Err() != nil:
		return ctx.Err() // the caller went away
	case e.life.Err() != nil:
		return ErrClosed // Close ended the run
	case runCtx.Err() != nil || exitCode == sys.ExitCodeDeadlineExceeded:
		return models.CapabilityFailed(models.ReasonTimeout, "the run did not end within %s", l.Timeout)
	case errors.As(err, &c):
		return models.CapabilityFailed(models.ReasonCrash, "%v", c)
	case err != nil && strings.Contains(err.Error(), "stack overflow"):
		return models.CapabilityFailed(models.ReasonMemory, "the module's call stack passed the engine's limit (calls nested too deeply)")
	case err != nil:
		return models.CapabilityFailed(models.ReasonExit, "the module trapped: %v", trimTrace(err))
	case exitCode != 0:
		code := int(exitCode)
		e := models.CapabilityFailed(models.ReasonExit, "the module exited with code %d", code)
		e.ExitCode = &code
		return e
	}
	return nil
}

// stackExceeded reports whether the instance's call stack weight passed the
// budget: the instrumentation traps then.
func (in *instance) stackExceeded() (over bool) {
	defer func() {
		if recover() != nil {
			over = false
		}
	}()
	return int64(int32(in.stack.Get())) > in.m.stackBudget
}

// trimTrace keeps the first line of an engine error: its wasm stack trace
// says nothing a plugin author can use that the message does not.
func trimTrace(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// memoryError is the failure of a run whose memory could not grow: past the
// run's limit, or past what is left of the memory of all runs.
func memoryError(l Limits, mem *linearMemory) error {
	if mem != nil && mem.starved.Load() && !mem.exceeded.Load() {
		return models.CapabilityFailed(models.ReasonMemory, "the module wanted more memory while the host's memory for runs (%d bytes) was in use by other runs; try again", l.TotalMemoryBytes)
	}
	return models.CapabilityFailed(models.ReasonMemory, "the module wanted more than %d bytes of memory", l.MemoryBytes)
}

// starved is the failure of a run that could not start for want of the
// memory of all runs.
func starved(l Limits) error {
	return models.CapabilityFailed(models.ReasonBusy, "the host's memory for runs (%d bytes) is in use by other runs; try again shortly", l.TotalMemoryBytes)
}

// crash is a panic of the engine, contained: the run fails, the process
// goes on.
type crash struct {
	where string
	value any
	stack []byte
}

func crashed(where string, p any) error {
	return &crash{where: where, value: p, stack: debug.Stack()}
}

func (c *crash) Error() string {
	return fmt.Sprintf("the engine failed while %s: %v", c.where, c.value)
}

// acquire takes a run slot for the Instance, one for the user and one
// overall, waiting at most QueueWait (or until the caller's deadline, if
// sooner) for them; when none frees up by then, the run is busy. A user's
// background runs have slots of their own, apart from the runs the user
// asks for, so that neither waits for the other, and wait up to a run's
// wall time: no one is waiting for their answer.
func (e *Engine) acquire(ctx context.Context, user, instanceID string, background bool) (func(), error) {
	wait := e.limits.QueueWait
	ikey, ukey := "i"+instanceID, "u"+user
	if background {
		wait, ukey = max(wait, e.limits.Timeout), "b"+user
	}
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)-time.Millisecond)
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	for {
		e.mu.Lock()
		if e.running[ikey] < e.limits.PerInstance && (user == "" || e.running[ukey] < e.limits.PerUser) {
			e.running[ikey]++
			if user != "" {
				e.running[ukey]++
			}
			e.mu.Unlock()
			break
		}
		freed := e.freed
		e.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return nil, e.busy()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	releaseKeys := func() {
		e.mu.Lock()
		for _, k := range []string{ikey, ukey} {
			if k == "u" || k == "b" {
				continue
			}
			if e.running[k]--; e.running[k] <= 0 {
				delete(e.running, k)
			}
		}
		close(e.freed)
		e.freed = make(chan struct{})
		e.mu.Unlock()
	}
	select {
	case e.slots <- struct{}{}:
	case <-timer.C:
		releaseKeys()
		return nil, e.busy()
	case <-ctx.Done():
		releaseKeys()
		return nil, ctx.Err()
	}
	return func() { <-e.slots; releaseKeys() }, nil
}

// busy is the error of a run that found no slot within QueueWait.
func (e *Engine) busy() error {
	return models.CapabilityFailed(models.ReasonBusy, "no run slot freed up within %s (%d runs at once overall, %d per user, %d per Instance)",
		e.limits.QueueWait, e.limits.Concurrency, e.limits.PerUser, e.limits.PerInstance)
}

// boundedWriter keeps at most max bytes. Past it, it records the overflow
// and calls overflow (if set) once; it never fails a write, so that a module
// is stopped by the host rather than by an error it might ignore.
type boundedWriter struct {
	max      int
	buf      bytes.Buffer
	over     atomic.Bool
	overflow func()
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w == nil {
		return len(p), nil // an idle instance has no streams
	}
	room := w.max - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		if !w.over.Swap(true) && w.overflow != nil {
			w.overflow()
		}
		return len(p), nil
	}
	w.buf.Write(p)
	return len(p), nil
}

func (w *boundedWriter) bytes() []byte {
	if w == nil {
		return nil
	}
	return w.buf.Bytes()
}
