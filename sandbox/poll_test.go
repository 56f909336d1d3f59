package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	"pluginhost/internal/wasmtest"
	"pluginhost/models"
)

// poll_oneoff answers at most MaxPollSubscriptions subscriptions, with
// EINVAL past them, and keeps what Go's runtime and wasi-libc need: a
// relative clock sleeps and occurs, a ready stream answers at once. The
// module exits with 10000 + 100 × errno + the events written.
func TestPollOneoff(t *testing.T) {
	e := newEngine(t, Limits{})
	clocks := func(n int, timeout uint64) []wasmtest.Subscription {
		subs := make([]wasmtest.Subscription, n)
		for i := range subs {
			subs[i].Timeout = timeout
		}
		return subs
	}
	const hour = 3600e9
	tests := []struct {
		name  string
		subs  []wasmtest.Subscription
		errno int
		n     int
	}{
		{"one clock of a millisecond", clocks(1, 1e6), 0, 1},
		{"as many clocks as allowed", clocks(MaxPollSubscriptions, 1e6), 0, MaxPollSubscriptions},
		{"one past the cap", clocks(MaxPollSubscriptions+1, 0), errnoInval, 0},
		{"no subscription", nil, errnoInval, 0},
		{"an absolute time", []wasmtest.Subscription{{Flags: 1}}, errnoNotsup, 0},
		{"only the clocks due occur", []wasmtest.Subscription{{Timeout: 1e6}, {Timeout: hour}}, 0, 1},
		{"standard input is ready, the hour's clock does not occur", []wasmtest.Subscription{{Timeout: hour}, {Kind: 1, FD: 0}}, 0, 1},
		{"standard error is ready", []wasmtest.Subscription{{Kind: 2, FD: 2}}, 0, 1},
		{"a stream that is not there is an event of EBADF", []wasmtest.Subscription{{Kind: 1, FD: 7}}, 0, 1},
		{"an unknown kind", []wasmtest.Subscription{{Kind: 9}}, errnoInval, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := compileBytes(t, e, wasmtest.PollOnce(tt.subs))
			defer e.Release(m)
			_, _, err := e.Run(context.Background(), job(m, models.Capability{}, `{}`))
			f := failure(t, err)
			want := 10000 + 100*tt.errno + tt.n
			if f.Reason != models.ReasonExit || f.ExitCode == nil || *f.ExitCode != want {
				t.Fatalf("got %v (reason %q, exit code %v), want exit code %d", err, f.Reason, f.ExitCode, want)
			}
		})
	}
}

// A Go module's time.Sleep and a C module's nanosleep, which their runtimes
// do with poll_oneoff, sleep as long as asked, and the module answers.
func TestSleepInModules(t *testing.T) {
	e := newEngine(t, Limits{})
	for _, tt := range []struct {
		name string
		m    func(t *testing.T) *Module
	}{
		{"Go time.Sleep", func(t *testing.T) *Module { return compile(t, e, "nap") }},
		{"C nanosleep", func(t *testing.T) *Module { return compileBytes(t, e, wasmtest.C(t, "testdata/c/nap.c", false)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := e.Run(context.Background(), job(tt.m(t), models.Capability{}, `{}`))
			if err != nil {
				t.Fatal(err)
			}
			var got struct{ Slept bool }
			if err := json.Unmarshal(res.Data, &got); err != nil || !got.Slept {
				t.Fatalf("got %s (%v), want slept", res.Data, err)
			}
		})
	}
}
