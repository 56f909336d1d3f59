package lifecycle_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// TestUpdateMigratesWhileUsersWrite: package updates that migrate every
// Instance's storage run while users write to those Instances. Storage writes
// and updates take their locks in one order, and a transaction the database
// aborts is run again, so every write and every update succeeds (on MariaDB
// opposite lock orders deadlocked and answered INTERNAL), and no write or
// migration is lost. Run it with -race.
func TestUpdateMigratesWhileUsersWrite(t *testing.T) {
	const (
		instances = 3
		writers   = 2 // per Instance
		writes    = 12
		updates   = 5
	)
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		ui := models.Caller{UserID: alice.ID}
		instl := must(e.Life.Install(ctx, alice, e.Package(t, notes("1.0.0", 1, "retain"), nil)))(t)
		var insts []*models.Instance
		for i := 0; i < instances; i++ {
			in := e.Instance(t, alice, instl)
			insts = append(insts, in)
			if _, err := e.Store.Create(ctx, ui, in.ID, "notes", "m1", js(in.ID)); err != nil {
				t.Fatal(err)
			}
		}
		// Each package v moves the seed key m<k> to m<k+1>, one step at a time.
		var pkgs [][]byte
		for v := 1; v <= updates; v++ {
			var steps []map[string]any
			for k := 1; k <= v; k++ {
				steps = append(steps, rename(k, "notes", fmt.Sprint("m", k), fmt.Sprint("m", k+1)))
			}
			pkgs = append(pkgs, e.Package(t, notes(fmt.Sprintf("1.0.%d", v), v+1, "retain", steps...), nil))
		}
		var wg sync.WaitGroup
		errs := make(chan error, instances*writers*writes*2+updates)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v, pkg := range pkgs {
				if _, err := e.Life.Update(ctx, alice, instl.ID, pkg); err != nil {
					errs <- fmt.Errorf("update %d: %w", v+1, err)
				}
			}
		}()
		for _, in := range insts {
			for g := 0; g < writers; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < writes; i++ {
						key := fmt.Sprintf("w%d_%d", g, i)
						if _, err := e.Store.Create(ctx, ui, in.ID, "notes", key, js(i)); err != nil {
							errs <- fmt.Errorf("create %s: %w", key, err)
							continue
						}
						if _, err := e.Store.Update(ctx, ui, in.ID, "notes", key, js(-i), 1); err != nil {
							errs <- fmt.Errorf("update %s: %w", key, err)
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%v (code %s)", err, models.ErrorCode(err))
		}
		got, err := e.Life.Installation(ctx, alice, instl.ID)
		if err != nil || got.StorageVersion != updates+1 {
			t.Fatalf("installation after updates: %+v %v", got, err)
		}
		for _, in := range insts {
			res, err := e.Store.Get(ctx, ui, in.ID, "notes", fmt.Sprint("m", updates+1))
			if err != nil {
				t.Fatalf("seed key after %d migrations: %v", updates, err)
			}
			var d models.ItemData
			if json.Unmarshal(res.Data, &d) != nil || string(d.Item.Value) != string(js(in.ID)) {
				t.Fatalf("seed of %s: %s", in.ID, res.Data)
			}
			if _, err := e.Store.Get(ctx, ui, in.ID, "notes", "m1"); models.ErrorCode(err) != models.ErrNotFound {
				t.Fatalf("m1 still there after migrations: %v", err)
			}
			for g := 0; g < writers; g++ {
				for i := 0; i < writes; i++ {
					res, err := e.Store.Get(ctx, ui, in.ID, "notes", fmt.Sprintf("w%d_%d", g, i))
					if err != nil {
						t.Fatalf("written key lost: %v", err)
					}
					var d models.ItemData
					if json.Unmarshal(res.Data, &d); d.Item.Revision != 2 || string(d.Item.Value) != string(js(-i)) {
						t.Fatalf("w%d_%d: revision %d value %s", g, i, d.Item.Revision, d.Item.Value)
					}
				}
			}
		}
	})
}

// TestCreateInstanceRacingPurge: createInstance racing an uninstall with
// data_policy purge never leaves an Instance of the deleted Installation, and
// never answers success for an Instance that is not there (unless the
// uninstall came after it and deleted it with the others); the loser is
// PLUGIN_STORAGE_PERMISSION_DENIED, never INTERNAL.
func TestCreateInstanceRacingPurge(t *testing.T) {
	const (
		rounds   = 15
		creators = 4
	)
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		ui := models.Caller{UserID: alice.ID}
		for r := 0; r < rounds; r++ {
			instl := must(e.Life.Install(ctx, alice, e.Package(t, notes("1.0.0", 1, "purge"), nil)))(t)
			first := e.Instance(t, alice, instl)
			e.Store.Create(ctx, ui, first.ID, "notes", "k", js(1))
			var wg sync.WaitGroup
			created := make(chan *models.Instance, creators)
			failed := make(chan error, creators+1)
			for c := 0; c < creators; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					in, err := e.Life.CreateInstance(ctx, alice, instl.ID, "")
					if err != nil {
						failed <- err
						return
					}
					e.Store.Create(ctx, ui, in.ID, "notes", "k", js(2)) // may lose to the uninstall
					created <- in
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := e.Life.Uninstall(ctx, alice, instl.ID); err != nil {
					failed <- fmt.Errorf("uninstall: %w", err)
				}
			}()
			wg.Wait()
			close(created)
			close(failed)
			for err := range failed {
				if models.ErrorCode(err) != models.ErrPermissionDenied {
					t.Fatalf("round %d: %v (want success or %s)", r, err, models.ErrPermissionDenied)
				}
			}
			if n := testenv.Count(t, e.DB.Read, "instances", "installation_id = ?", instl.ID); n != 0 {
				t.Fatalf("round %d: %d Instances of the purged Installation are left", r, n)
			}
			if n := testenv.Count(t, e.DB.Read, "storage_items", "installation_id = ?", instl.ID); n != 0 {
				t.Fatalf("round %d: %d items of the purged Installation are left", r, n)
			}
			for in := range created {
				if _, err := e.Life.Instance(ctx, alice, in.ID); models.ErrorCode(err) != models.ErrPermissionDenied {
					t.Fatalf("round %d: Instance %s answered as created is still reachable: %v", r, in.ID, err)
				}
			}
		}
	})
}
