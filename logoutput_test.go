package main

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pluginhost/httpapi"
)

// syncBuffer is the process's standard error as a test sees it.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

// read returns what was written, and in how many writes.
func (s *syncBuffer) read() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String(), s.writes
}

func TestLogOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		// log logs through the server's logger; flushed reports whether the
		// lines must be out at once, before any flush period has passed.
		log     func(l *slog.Logger, out *logOutput)
		want    []string
		flushed bool
	}{
		{"access log lines reach the output after the flush period", func(l *slog.Logger, _ *logOutput) {
			requests(l, 50)
		}, []string{"route=/r0", "route=/r49"}, false},
		{"any other line is out at once, with the lines before it", func(l *slog.Logger, _ *logOutput) {
			requests(l, 50)
			l.Info("pluginhost serving", "addr", "127.0.0.1:8080")
		}, []string{"route=/r0", "route=/r49", "msg=\"pluginhost serving\""}, true},
		{"a warning is out at once, with the lines before it", func(l *slog.Logger, _ *logOutput) {
			l.Info(httpapi.AccessMessage, "route", "/graphql")
			l.Warn("slow", "took", "2s")
		}, []string{"route=/graphql", "msg=slow"}, true},
		{"an access log record of another level is out at once", func(l *slog.Logger, _ *logOutput) {
			l.Warn(httpapi.AccessMessage, "route", "/graphql")
		}, []string{"route=/graphql"}, true},
		{"an error is out at once, from a logger with attributes", func(l *slog.Logger, _ *logOutput) {
			l.With("component", "writer").WithGroup("db").Error("commit failed")
		}, []string{"msg=\"commit failed\"", "component=writer"}, true},
		{"a full buffer is written at once", func(l *slog.Logger, _ *logOutput) {
			for i := 0; i < logBufferBytes/50+1; i++ {
				l.Info(httpapi.AccessMessage, "route", strings.Repeat("r", 40))
			}
		}, []string{"msg=request"}, true},
		{"Flush writes what is kept", func(l *slog.Logger, out *logOutput) {
			l.Info(httpapi.AccessMessage, "route", "/graphql")
			out.Flush()
		}, []string{"route=/graphql"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := &syncBuffer{}
			out := newLogOutput(stderr)
			tc.log(newLogger(out, "info", "text"), out)
			got, writes := stderr.read()
			if !tc.flushed {
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(got, tc.want[len(tc.want)-1]) && time.Now().Before(deadline) {
					time.Sleep(logFlushEvery)
					got, writes = stderr.read()
				}
			}
			last := -1
			for _, w := range tc.want {
				i := strings.Index(got, w)
				if i < 0 {
					t.Fatalf("the output lacks %q:\n%s", w, got)
				}
				if i < last {
					t.Errorf("%q came out of order:\n%s", w, got)
				}
				last = i
			}
			// Lines logged one after another share writes (a machine busy
			// enough to stall the test past the flush period splits them in
			// a few, never one each).
			if n := strings.Count(got, "\n"); writes >= n && n > 1 {
				t.Errorf("%d lines took %d writes: they were not batched", n, writes)
			}
		})
	}
}

// requests logs n access log lines, of routes /r0 to /r<n-1>.
func requests(l *slog.Logger, n int) {
	for i := range n {
		l.Info(httpapi.AccessMessage, "route", "/r"+strconv.Itoa(i))
	}
}
