package access_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// The rule, case by case, with its code: the Instance is the caller's,
// of an installed plugin, enabled for Use, at the caller's generation.
func TestDecide(t *testing.T) {
	row := func(edit func(*access.Row)) *access.Row {
		r := &access.Row{}
		r.Instance.ID, r.Instance.UserID, r.Instance.Enabled = "ins_1", "usr_a", true
		r.Installation.Status, r.Installation.Generation = models.InstallationInstalled, 3
		if edit != nil {
			edit(r)
		}
		return r
	}
	alice := models.Caller{UserID: "usr_a"}
	for _, tt := range []struct {
		name   string
		caller models.Caller
		row    *access.Row
		need   access.Need
		want   models.Code
	}{
		{"the caller's, enabled", alice, row(nil), access.Use, ""},
		{"unknown", alice, nil, access.Use, models.ErrPermissionDenied},
		{"another user's", models.Caller{UserID: "usr_b"}, row(nil), access.Use, models.ErrPermissionDenied},
		{"no user", models.Caller{}, row(nil), access.Use, models.ErrPermissionDenied},
		{"of an uninstalled plugin", alice, row(func(r *access.Row) { r.Installation.Status = models.InstallationUninstalled }), access.Manage, models.ErrPermissionDenied},
		{"disabled, to use", alice, row(func(r *access.Row) { r.Instance.Enabled = false }), access.Use, models.ErrPermissionDenied},
		{"disabled, to manage", alice, row(func(r *access.Row) { r.Instance.Enabled = false }), access.Manage, ""},
		{"at the caller's generation", models.Caller{UserID: "usr_a", Generation: 3}, row(nil), access.Use, ""},
		{"at another generation", models.Caller{UserID: "usr_a", Generation: 2}, row(nil), access.Use, models.ErrConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := models.ErrorCode(access.Decide(tt.caller, "ins_1", tt.row, tt.need)); got != tt.want && !(tt.want == "" && got == "") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The gate keeps manifests within its bound, least recently used dropped
// first; a newer generation of an Installation drops the older at once, and
// so does Forget.
func TestManifestCache(t *testing.T) {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	ctx := context.Background()
	alice := env.User(t, "alice")
	gate := &access.Gate{DB: env.DB, MaxManifests: 2}
	var installs []*models.Installation
	for _, id := range []string{"com.test.a", "com.test.b", "com.test.c"} {
		installs = append(installs, env.Install(t, alice, fixture.Manifest(id, fixture.NS("n", 100))))
	}
	for _, in := range installs {
		if _, err := gate.Manifest(ctx, nil, in.ID, in.Generation); err != nil {
			t.Fatal(err)
		}
	}
	if n := gate.Kept(); n != 2 {
		t.Fatalf("%d manifests kept, want the bound, 2", n)
	}
	// A generation that is not current is a conflict, not a stale manifest.
	if _, err := gate.Manifest(ctx, nil, installs[0].ID, installs[0].Generation+1); models.ErrorCode(err) != models.ErrConflict {
		t.Fatalf("a generation not yet installed: %v", err)
	}
	up := fixture.Manifest("com.test.c", fixture.NS("n", 100))
	up["version"] = "1.1.0"
	updated, err := env.Life.Update(ctx, alice, installs[2].ID, env.Package(t, up, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Manifest(ctx, nil, updated.ID, updated.Generation); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Manifest(ctx, nil, installs[1].ID, installs[1].Generation); err != nil {
		t.Fatal(err)
	}
	if n := gate.Kept(); n != 2 {
		t.Fatalf("%d manifests kept after an update, want 2 (the old generation dropped)", n)
	}
	gate.Forget(updated.ID)
	if n := gate.Kept(); n != 1 {
		t.Fatalf("%d manifests kept after Forget, want 1", n)
	}
}

// Open and List give the same Instances with their manifests; List leaves
// out the disabled.
func TestOpenAndList(t *testing.T) {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	ctx := context.Background()
	alice, bob := env.User(t, "alice"), env.User(t, "bob")
	in := env.Install(t, alice, fixture.Manifest("com.test.a", fixture.NS("n", 100)))
	on, off := env.Instance(t, alice, in), env.Instance(t, alice, in)
	if _, err := env.Life.SetInstanceEnabled(ctx, alice, off.ID, false); err != nil {
		t.Fatal(err)
	}
	gate := env.Server.Gate
	got, err := gate.Open(ctx, models.Caller{UserID: alice.ID}, on.ID, access.Use)
	if err != nil || got.Manifest == nil || got.Manifest.ID != "com.test.a" || got.Installation.ID != in.ID || got.Instance.ID != on.ID {
		t.Fatalf("Open: %+v %v", got, err)
	}
	if _, err := gate.Open(ctx, models.Caller{UserID: bob.ID}, on.ID, access.Use); models.ErrorCode(err) != models.ErrPermissionDenied {
		t.Fatalf("bob opened alice's Instance: %v", err)
	}
	list, err := gate.List(ctx, alice.ID)
	if err != nil || len(list) != 1 || list[0].Instance.ID != on.ID {
		t.Fatalf("List: %v %v", list, err)
	}
	if list, _ := gate.List(ctx, bob.ID); len(list) != 0 {
		t.Fatalf("bob's List: %v", list)
	}
}

// The gate keeps the rows it read within its bound: at the bound it keeps
// them all, one past it it starts again from the row just read. Unknown
// Instances are not kept.
func TestRowBound(t *testing.T) {
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: "sqlite:" + t.TempDir() + "/ph.db"})
	ctx := context.Background()
	alice := env.User(t, "alice")
	in := env.Install(t, alice, fixture.Manifest("com.test.a", fixture.NS("n", 100)))
	gate := &access.Gate{DB: env.DB, MaxRows: 2}
	for i, want := range []int{1, 2, 1} {
		inst := env.Instance(t, alice, in)
		for range 2 { // read, then kept
			r, err := gate.Read(ctx, inst.ID)
			if err != nil || r == nil || r.Instance.ID != inst.ID {
				t.Fatalf("Instance %d: %+v, %v", i, r, err)
			}
		}
		if n := gate.KeptRows(); n != want {
			t.Fatalf("after %d Instances, %d rows kept; want %d", i+1, n, want)
		}
	}
	if r, err := gate.Read(ctx, "ins_unknown"); r != nil || err != nil || gate.KeptRows() != 1 {
		t.Fatalf("an unknown Instance: %+v, %v, %d rows kept", r, err, gate.KeptRows())
	}
}

// disableEnv names, for TestGateSeesEveryChange's helper process, the
// database and the Instance it disables.
const disableEnv = "PLUGINHOST_TEST_DISABLE_IN"

// TestDisableFromAnotherProcess is TestGateSeesEveryChange's other
// process: it disables the Instance disableEnv names (DSN, a space, the
// id), and is skipped otherwise.
func TestDisableFromAnotherProcess(t *testing.T) {
	dsn, id, ok := strings.Cut(os.Getenv(disableEnv), " ")
	if !ok {
		t.Skip("run by TestGateSeesEveryChange as another process")
	}
	db, err := database.Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Write.Exec("UPDATE instances SET enabled = ? WHERE id = ?", false, id).Error; err != nil {
		t.Fatal(err)
	}
}

// The gate answers from what it read only while nothing was committed
// since: an Instance disabled, by this process or by another one on the
// same database, is refused at the next call, and one enabled again is
// usable at once.
func TestGateSeesEveryChange(t *testing.T) {
	dsn := "sqlite:" + t.TempDir() + "/ph.db"
	env := fixture.New(t, testenv.Backend{Name: "sqlite", DSN: dsn})
	ctx := context.Background()
	alice := env.User(t, "alice")
	inst := env.Instance(t, alice, env.Install(t, alice, fixture.Manifest("com.test.a", fixture.NS("n", 100))))
	gate, caller := env.Server.Gate, models.Caller{UserID: alice.ID}
	open := func(want models.Code, when string) {
		t.Helper()
		for range 2 { // the first read, then the row kept
			if _, err := gate.Open(ctx, caller, inst.ID, access.Use); models.ErrorCode(err) != want {
				t.Fatalf("%s: Open: %v, want %q", when, err, want)
			}
		}
	}
	open("", "enabled")
	if _, ok := env.DB.Version(); !ok {
		t.Fatal("SQLite tells no Version: the gate would read every time, and this test would not test what it keeps")
	}
	if _, err := env.Life.SetInstanceEnabled(ctx, alice, inst.ID, false); err != nil {
		t.Fatal(err)
	}
	open(models.ErrPermissionDenied, "disabled here")
	if _, err := env.Life.SetInstanceEnabled(ctx, alice, inst.ID, true); err != nil {
		t.Fatal(err)
	}
	open("", "enabled again")

	// Callers in parallel while the Instance is disabled and enabled in
	// turn: a call made while no change is under way sees the last one.
	const changes = 40
	on := func(n int64) bool { return n%2 == 0 } // after n changes: the first disables
	var started, finished atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := finished.Load()
				_, err := gate.Open(ctx, caller, inst.ID, access.Use)
				if started.Load() == done && (err == nil) != on(done) {
					errs <- fmt.Errorf("after %d changes (enabled: %v), Open: %v", done, on(done), err)
					return
				}
			}
		})
	}
	for n := int64(1); n <= changes; n++ {
		started.Store(n)
		if _, err := env.Life.SetInstanceEnabled(ctx, alice, inst.ID, on(n)); err != nil {
			t.Error(err) // the callers are stopped first
			break
		}
		finished.Store(n)
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	open("", "enabled after the changes in parallel")

	if runtime.GOOS == "windows" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDisableFromAnotherProcess$", "-test.count", "1")
	cmd.Env = append(os.Environ(), disableEnv+"="+dsn+" "+inst.ID)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	open(models.ErrPermissionDenied, "disabled by another process")
}
