package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"pluginhost/httpapi"
)

// logOutput batches the access log's lines into fewer writes: a line a
// request would cost a busy server a write a request. An access log line
// reaches the output within logFlushEvery of being logged, or with the next
// line of any other record, which goes out at once (logHandler), and before
// serve returns (Flush); at most logBufferBytes wait.
type logOutput struct {
	w     io.Writer
	mu    sync.Mutex
	buf   []byte
	timer *time.Timer
}

const (
	logFlushEvery  = 25 * time.Millisecond
	logBufferBytes = 64 << 10
)

func newLogOutput(w io.Writer) *logOutput {
	o := &logOutput{w: w}
	o.timer = time.AfterFunc(time.Hour, o.Flush)
	o.timer.Stop()
	return o
}

// Write keeps p, a whole line as slog writes them, for the next flush.
func (o *logOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.buf) == 0 {
		o.timer.Reset(logFlushEvery)
	}
	o.buf = append(o.buf, p...)
	if len(o.buf) >= logBufferBytes {
		o.flushLocked()
	}
	return len(p), nil
}

// Flush writes the lines kept so far.
func (o *logOutput) Flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

func (o *logOutput) flushLocked() {
	if len(o.buf) == 0 {
		return
	}
	o.timer.Stop()
	o.w.Write(o.buf) // a log that cannot be written has nowhere to say so
	if cap(o.buf) > 4*logBufferBytes {
		o.buf = nil // a burst of long lines: give the memory back
	} else {
		o.buf = o.buf[:0]
	}
}

// logHandler flushes its output after each record but the access log's
// (httpapi.AccessMessage at level info), so that every other line is seen
// at once, with the access log's lines before it.
type logHandler struct {
	slog.Handler
	out *logOutput
}

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Message != httpapi.AccessMessage || r.Level != slog.LevelInfo {
		h.out.Flush()
	}
	return err
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(attrs), h.out}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name), h.out}
}
