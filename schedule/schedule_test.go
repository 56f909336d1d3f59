package schedule_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"pluginhost/capability"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/internal/wasmtest"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/schedule"
	"pluginhost/server"
	"pluginhost/storage"
)

// clock is a shared fake clock: the test moves time on by whole periods.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type world struct {
	env      *fixture.Env
	second   *fixture.Env // the second replica's server
	clock    *clock
	replicas []*schedule.Scheduler
	user     *models.User
	intl     *models.Installation
	inst     *models.Instance
}

func manifest(dataPolicy string) map[string]any {
	// Each policy is its own plugin: a plugin id stays with the publisher key
	// that first installed it, and every world signs with a key of its own.
	id := "com.example.tick"
	if dataPolicy != "" {
		id += "." + dataPolicy
	}
	m := fixture.Manifest(id, fixture.NS("notes", 4096))
	if dataPolicy != "" {
		m["data_policy"] = dataPolicy
	}
	m["capabilities"] = []any{
		map[string]any{"id": "notes.tick", "kind": "background", "description": "counts", "module": "capabilities/tick.wasm", "schedule_seconds": 30},
		map[string]any{"id": "notes.fail", "kind": "background", "description": "fails", "module": "capabilities/exit3.wasm", "schedule_seconds": 60},
		map[string]any{"id": "notes.slow", "kind": "background", "description": "sleeps", "module": "capabilities/sleep.wasm", "schedule_seconds": 3600},
	}
	return m
}

// newWorld installs the plugin and starts two replicas, each with its own
// database connection and engine, on the same database.
func newWorld(t *testing.T, b testenv.Backend) *world {
	t.Helper()
	return newWorldWithPolicy(t, b, "")
}

// newWorldWithPolicy is newWorld for a plugin with the given data_policy.
func newWorldWithPolicy(t *testing.T, b testenv.Backend, dataPolicy string) *world {
	t.Helper()
	// Runs of one user at once are not what these tests are about: the
	// slow capability must not hold up the others.
	limits := fixture.RunLimits(sandbox.Limits{Timeout: 2 * time.Second, PerUser: 4})
	w := &world{env: fixture.New(t, b, limits), clock: &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	w.user = w.env.User(t, "alice")
	files := map[string][]byte{
		"capabilities/tick.wasm":  wasmtest.Reactor(t, "testdata/reactors", "tick"),
		"capabilities/exit3.wasm": wasmtest.Module(t, "../sandbox/testdata/modules", "exit3"),
		"capabilities/sleep.wasm": wasmtest.Module(t, "../sandbox/testdata/modules", "sleep"),
	}
	var err error
	if w.intl, err = w.env.Life.Install(context.Background(), w.user, w.env.Package(t, manifest(dataPolicy), files)); err != nil {
		t.Fatal(err)
	}
	w.inst = w.env.Instance(t, w.user, w.intl)
	// Two replicas: this test's server and a second one on the same
	// database, each with its own connections and engine, each running its
	// schedule by hand on the test's clock.
	w.second = fixture.New(t, b, limits)
	for i, s := range []*server.Server{w.env.Server, w.second.Server} {
		w.replicas = append(w.replicas, &schedule.Scheduler{DB: s.DB, Runner: s.Runs, Gate: s.Gate, Now: w.clock.Now, Owner: []string{"a", "b"}[i]})
	}
	return w
}

// pass runs one pass of every replica at once.
func (w *world) pass(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(w.replicas))
	for _, r := range w.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- r.Pass(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// runs counts the audited background runs of a capability.
func (w *world) runs(t *testing.T, capabilityID string) int {
	t.Helper()
	n := 0
	q := storage.AuditQuery{Actor: models.ActorBackground, Page: models.PageArgs{First: new(100)}}
	for {
		page, err := w.env.Store.Audit(context.Background(), w.user.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Nodes() {
			if e.Operation == storage.OperationRun && e.Capability == capabilityID {
				n++
			}
		}
		if !page.PageInfo.HasNextPage {
			return n
		}
		q.Page.After = page.PageInfo.EndCursor
	}
}

func (w *world) ticks(t *testing.T) int {
	t.Helper()
	res, err := w.env.Store.Get(context.Background(), models.Caller{UserID: w.user.ID}, w.inst.ID, "notes", "ticks")
	if err != nil {
		return 0
	}
	var d models.ItemData
	json.Unmarshal(res.Data, &d)
	var n int
	json.Unmarshal(d.Item.Value, &n)
	return n
}

// Two replicas on one database: each period of each Instance's capability
// runs exactly once, none is skipped, and its host actions change storage.
func TestExactlyOneReplicaPerPeriod(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		// A subscriber on each replica: a run's change is published by the
		// replica that ran it (across replicas, Redis relays it).
		subs := []*fixture.Changes{w.env.Changes(t, w.user, w.inst.ID), w.second.Changes(t, w.user, w.inst.ID)}
		const periods = 6
		for p := 1; p <= periods; p++ {
			w.pass(t)
			w.pass(t) // a second pass within the same period runs nothing
			if got := w.runs(t, "notes.tick"); got != p {
				t.Fatalf("after period %d: %d runs of notes.tick, want %d", p, got, p)
			}
			w.clock.add(30 * time.Second)
		}
		if got := w.ticks(t); got != periods {
			trail, _ := w.env.Store.Audit(context.Background(), w.user.ID, storage.AuditQuery{Actor: models.ActorBackground, Page: models.PageArgs{First: new(100)}})
			entries := trail.Nodes()
			var outcomes []string
			for _, e := range entries {
				outcomes = append(outcomes, e.Operation+":"+e.Outcome)
			}
			t.Fatalf("ticks = %d, want %d: each run's host actions apply once (audit, newest first: %v)", got, periods, outcomes)
		}
		got := 0
		for _, sub := range subs {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // the changes came long ago
			for {
				c, ok := sub.Next(ctx)
				if !ok {
					break
				}
				if c.Key != nil && *c.Key == "ticks" {
					got++
				}
			}
			cancel()
		}
		if got == 0 {
			t.Fatal("no subscriber got a background run's change")
		}
	})
}

// A disabled Instance and an uninstalled plugin stop running; re-enabling
// resumes.
func TestDisabledAndUninstalledStop(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		ctx := context.Background()
		w.pass(t)
		if _, err := w.env.Life.SetInstanceEnabled(ctx, w.user, w.inst.ID, false); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			w.clock.add(30 * time.Second)
			w.pass(t)
		}
		if got := w.runs(t, "notes.tick"); got != 1 {
			t.Fatalf("%d runs; a disabled Instance ran", got)
		}
		if _, err := w.env.Life.SetInstanceEnabled(ctx, w.user, w.inst.ID, true); err != nil {
			t.Fatal(err)
		}
		w.pass(t)
		if got := w.runs(t, "notes.tick"); got != 2 {
			t.Fatalf("%d runs after re-enabling, want 2", got)
		}
		if err := w.env.Life.Uninstall(ctx, w.user, w.intl.ID); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			w.clock.add(30 * time.Second)
			w.pass(t)
		}
		if got := w.runs(t, "notes.tick"); got != 2 {
			t.Fatalf("%d runs; an uninstalled plugin ran", got)
		}
	})
}

// Uninstall with purge deletes the plugin's schedules and stored modules
// with its Instances; retain keeps them for a reinstall.
func TestUninstallPurgesSchedulesAndModules(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		for _, tt := range []struct {
			policy string
			left   bool
		}{{models.DataPolicyPurge, false}, {models.DataPolicyRetain, true}} {
			t.Run(tt.policy, func(t *testing.T) {
				w := newWorldWithPolicy(t, b, tt.policy)
				w.pass(t)
				count := func(table, column, id string) int64 {
					var n int64
					if err := w.env.DB.Read.Table(table).Where(column+" = ?", id).Count(&n).Error; err != nil {
						t.Fatal(err)
					}
					return n
				}
				if count("background_schedules", "instance_id", w.inst.ID) == 0 || count("capability_modules", "installation_id", w.intl.ID) == 0 {
					t.Fatal("no schedule or module rows before the uninstall")
				}
				if err := w.env.Life.Uninstall(context.Background(), w.user, w.intl.ID); err != nil {
					t.Fatal(err)
				}
				schedules, modules := count("background_schedules", "instance_id", w.inst.ID), count("capability_modules", "installation_id", w.intl.ID)
				if (schedules > 0) != tt.left || (modules > 0) != tt.left {
					t.Fatalf("after uninstall (%s): %d schedules, %d modules left", tt.policy, schedules, modules)
				}
			})
		}
	})
}

// A failing run backs off, doubling from its period up to one hour, and
// backgroundRuns shows it.
func TestFailingRunBacksOff(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		r := w.replicas[0]
		start := w.clock.Now()
		var runAt []time.Duration
		for w.clock.Now().Sub(start) <= 16*time.Minute {
			before := w.runs(t, "notes.fail")
			w.pass(t)
			if w.runs(t, "notes.fail") > before {
				runAt = append(runAt, w.clock.Now().Sub(start))
			}
			w.clock.add(30 * time.Second)
		}
		want := []time.Duration{0, 2 * time.Minute, 6 * time.Minute, 14 * time.Minute} // waits of 120 s, 240 s, 480 s
		if len(runAt) != len(want) {
			t.Fatalf("failing runs at %v, want %v", runAt, want)
		}
		for i := range want {
			if runAt[i] != want[i] {
				t.Fatalf("failing runs at %v, want %v", runAt, want)
			}
		}
		runs, err := r.Runs(context.Background(), w.inst)
		if err != nil {
			t.Fatal(err)
		}
		var fail *schedule.Run
		for i := range runs {
			if runs[i].Capability == "notes.fail" {
				fail = &runs[i]
			}
		}
		if fail == nil || fail.Failures != 4 || fail.LastOutcome != models.ReasonExit || fail.ScheduleSeconds != 60 {
			t.Fatalf("backgroundRuns %+v", runs)
		}
	})
}

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		period   time.Duration
		failures int
		want     time.Duration
	}{
		{30 * time.Second, 0, 30 * time.Second},
		{30 * time.Second, 1, time.Minute},
		{30 * time.Second, 7, time.Hour},
		{30 * time.Second, 100, time.Hour},
		{24 * time.Hour, 3, 24 * time.Hour},
	} {
		if got := schedule.Backoff(tt.period, tt.failures); got != tt.want {
			t.Errorf("Backoff(%s, %d) = %s, want %s", tt.period, tt.failures, got, tt.want)
		}
	}
}

// A replica compiles the modules of a package with scheduled capabilities
// when it first sees the package, before it claims any of its runs, so
// that its first run does not spend its period compiling.
func TestReplicaCompilesScheduledModulesAhead(t *testing.T) {
	w := newWorld(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	if err := w.replicas[0].Pass(context.Background()); err != nil {
		t.Fatal(err) // replica a claims and runs the due periods
	}
	cache := t.TempDir()
	engine, err := sandbox.New(context.Background(), cache, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close(context.Background()) })
	late := &schedule.Scheduler{DB: w.env.DB, Now: w.clock.Now, Owner: "c", Gate: w.env.Server.Gate,
		Runner: &capability.Service{DB: w.env.DB, Storage: w.env.Store, Engine: engine, Gate: w.env.Server.Gate}}
	before := w.runs(t, "notes.tick")
	if err := late.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.runs(t, "notes.tick"); got != before {
		t.Fatalf("the late replica ran a period replica a had claimed: %d runs, want %d", got, before)
	}
	// Both modules of the package are compiled by the late replica without
	// a run of its own.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		st := engine.Stats()
		if st.Compiled >= 2 {
			break
		}
		if time.Now().After(deadline) { // a safety net, not a measure
			t.Fatalf("the late replica compiled nothing ahead of its runs: %+v", st)
		}
	}
}

// run returns the schedule of one capability of the world's Instance.
func (w *world) run(t *testing.T, capabilityID string) schedule.Run {
	t.Helper()
	runs, err := w.replicas[0].Runs(context.Background(), w.inst)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Capability == capabilityID {
			return r
		}
	}
	t.Fatalf("no schedule of %s in %+v", capabilityID, runs)
	return schedule.Run{}
}

// quarantines counts the audit trail's quarantine records of a capability.
func (w *world) quarantines(t *testing.T, capabilityID string) int {
	t.Helper()
	trail, err := w.env.Store.Audit(context.Background(), w.user.ID, storage.AuditQuery{Actor: models.ActorBackground, Page: models.PageArgs{First: new(100)}})
	entries := trail.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Capability == capabilityID && e.Operation == storage.OperationQuarantine && e.Outcome == schedule.OutcomeQuarantined {
			n++
		}
	}
	return n
}

// A capability whose runs keep failing is quarantined after QuarantineAfter
// failures in a row: it runs no more, backgroundRuns and the audit trail
// say so, and Resume makes it due at once.
func TestFailingCapabilityIsQuarantined(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		for range 100 {
			before := w.runs(t, "notes.fail")
			w.pass(t)
			if w.runs(t, "notes.fail") == before {
				w.clock.add(time.Hour) // the back-off is at most an hour
			}
			if w.run(t, "notes.fail").QuarantinedAt != nil {
				break
			}
		}
		r := w.run(t, "notes.fail")
		if r.QuarantinedAt == nil || r.Failures != schedule.QuarantineAfter {
			t.Fatalf("after the failures: %+v, want quarantined after %d", r, schedule.QuarantineAfter)
		}
		if n := w.quarantines(t, "notes.fail"); n != 1 {
			t.Fatalf("%d quarantine records in the audit trail, want 1", n)
		}
		runs := w.runs(t, "notes.fail")
		for range 3 {
			w.clock.add(2 * time.Hour)
			w.pass(t)
		}
		if got := w.runs(t, "notes.fail"); got != runs {
			t.Fatalf("a quarantined capability ran: %d runs, then %d", runs, got)
		}
		if err := w.replicas[0].Resume(context.Background(), w.inst.ID, "notes.fail"); err != nil {
			t.Fatal(err)
		}
		w.pass(t)
		if got := w.runs(t, "notes.fail"); got != runs+1 {
			t.Fatalf("after Resume: %d runs, want %d", got, runs+1)
		}
		if r := w.run(t, "notes.fail"); r.QuarantinedAt != nil || r.Failures != 1 {
			t.Fatalf("after Resume and a failed run: %+v", r)
		}
	})
}

// A run whose lease ran out with no outcome did not finish: the replica
// running it stopped, perhaps because of it. Its capability is quarantined,
// not run again by the next replica or after a restart.
func TestLostRunIsQuarantined(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		w := newWorld(t, b)
		w.pass(t)
		before := w.runs(t, "notes.tick")
		// A replica claimed the next period and died during the run.
		w.clock.add(30 * time.Second)
		now := w.clock.Now()
		err := w.env.DB.Write.Exec(`UPDATE background_schedules SET lease_owner = 'dead', lease_until = ?, next_run_at = ?
			WHERE instance_id = ? AND capability = ?`, now.Add(-time.Second).UnixMicro(), now.Add(30*time.Second).UnixMicro(), w.inst.ID, "notes.tick").Error
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			w.pass(t)
			w.clock.add(30 * time.Second)
		}
		if got := w.runs(t, "notes.tick"); got != before {
			t.Fatalf("the lost run's capability ran again: %d runs, then %d", before, got)
		}
		r := w.run(t, "notes.tick")
		if r.QuarantinedAt == nil || r.LastOutcome != schedule.OutcomeLost {
			t.Fatalf("after a lost run: %+v", r)
		}
		if n := w.quarantines(t, "notes.tick"); n != 1 {
			t.Fatalf("%d quarantine records, want 1", n)
		}
	})
}

// A replica that shuts down during a run releases its lease: the run is due
// again for another replica, and is not taken for a crash.
func TestShutdownReleasesLease(t *testing.T) {
	w := newWorld(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	r := w.replicas[0]
	r.Tick = 10 * time.Millisecond
	r.Start(context.Background())
	lease := func() (owner string, until int64) {
		row := w.env.DB.Read.Raw("SELECT lease_owner, lease_until FROM background_schedules WHERE instance_id = ? AND capability = ?", w.inst.ID, "notes.slow").Row()
		row.Scan(&owner, &until)
		return owner, until
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if owner, _ := lease(); owner == "a" {
			break
		}
		if time.Now().After(deadline) { // a safety net, not a measure
			t.Fatal("the replica never claimed the slow run")
		}
	}
	r.Close()
	if owner, until := lease(); owner != "" || until != 0 {
		t.Fatalf("after shutdown the lease is %q until %d", owner, until)
	}
	w.clock.add(time.Hour)
	w.pass(t)
	if q := w.run(t, "notes.slow"); q.QuarantinedAt != nil {
		t.Fatalf("a released run was taken for a crash: %+v", q)
	}
}

// A run that outlives its lease while its replica is alive keeps the lease:
// the replica renews it, and another replica does not take the run for lost
// (as it would, on a loaded machine, a run waiting for its compilation).
func TestLeaseRenewedWhileRunning(t *testing.T) {
	w := newWorld(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	r := w.replicas[0]
	r.Tick = 10 * time.Millisecond
	r.Lease = 300 * time.Millisecond
	r.Start(context.Background())
	defer r.Close()
	lease := func() (owner string, until int64) {
		row := w.env.DB.Read.Raw("SELECT lease_owner, lease_until FROM background_schedules WHERE instance_id = ? AND capability = ?", w.inst.ID, "notes.slow").Row()
		row.Scan(&owner, &until)
		return owner, until
	}
	// The slow run ends at its wall time (2 s); should a busy machine let
	// it end before the renewal is seen, the next period tries again.
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatal("the lease of a run under way was never renewed")
		}
		var claimed int64
		for deadline := time.Now().Add(time.Minute); claimed == 0; time.Sleep(10 * time.Millisecond) {
			if owner, until := lease(); owner == "a" {
				claimed = until
			}
			if time.Now().After(deadline) { // a safety net, not a measure
				t.Fatal("the replica never claimed the slow run")
			}
		}
		// The run's lease runs out on the clock the replicas share.
		w.clock.add(time.Minute)
		renewed := false
		for {
			owner, until := lease()
			if owner != "a" {
				break // the run ended first
			}
			if until > claimed {
				renewed = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !renewed {
			w.clock.add(time.Hour) // the next period of notes.slow
			continue
		}
		// The other replica's pass sees a lease in force, not a lost run.
		if err := w.replicas[1].Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		if q := w.run(t, "notes.slow"); q.QuarantinedAt != nil || q.LastOutcome == schedule.OutcomeLost {
			t.Fatalf("a run under way was taken for lost: %+v", q)
		}
		return
	}
}
