package lifecycle_test

import (
	"crypto/ed25519"
	"sync"
	"testing"

	"pluginhost/bundle"
	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// TestPluginIDBelongsToItsFirstPublisher: on one server a plugin id belongs to
// the publisher key that first installed it. Another trusted key's package of
// that id is refused, naming the id and both keys, whoever installs it (the
// same user, another user), as an update too, and after every Installation
// of it is gone; the owner's packages keep installing for anyone.
func TestPluginIDBelongsToItsFirstPublisher(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice, bob := e.User(t, "alice"), e.User(t, "bob")
		owner := bundle.KeyID(e.Key.Public().(ed25519.PublicKey))
		other := otherPublisher(t, e)
		otherID := bundle.KeyID(other.key.Public().(ed25519.PublicKey))
		m := fixture.Manifest("com.test.owned", fixture.NS("notes", 1024))
		m["data_policy"] = models.DataPolicyPurge
		instl := must(e.Life.Install(ctx, alice, e.Package(t, m, nil)))(t)
		before := dump(t, e)

		newer := fixture.Manifest("com.test.owned", fixture.NS("notes", 1024))
		newer["version"], newer["data_policy"] = "2.0.0", models.DataPolicyPurge
		refused := func(t *testing.T, err error) {
			t.Helper()
			wantCode(t, err, models.ErrPackageRejected, "com.test.owned", owner, otherID, "first installed")
			if dump(t, e) != before {
				t.Fatal("a refused package changed the database")
			}
		}
		t.Run("another user installs", func(t *testing.T) {
			_, err := e.Life.Install(ctx, bob, other.sign(t, m))
			refused(t, err)
		})
		t.Run("the same user installs", func(t *testing.T) {
			_, err := e.Life.Install(ctx, alice, other.sign(t, m))
			refused(t, err)
		})
		t.Run("an update", func(t *testing.T) {
			_, err := e.Life.Update(ctx, alice, instl.ID, other.sign(t, newer))
			refused(t, err)
		})
		t.Run("an update that is not newer", func(t *testing.T) {
			_, err := e.Life.Update(ctx, alice, instl.ID, other.sign(t, m))
			refused(t, err)
		})

		// The owner's packages install for anyone, and update.
		must(e.Life.Install(ctx, bob, e.Package(t, m, nil)))(t)
		must(e.Life.Update(ctx, alice, instl.ID, e.Package(t, newer, nil)))(t)

		// Purged everywhere, the id still belongs to its first key.
		for _, u := range []*models.User{alice, bob} {
			list := must(e.Life.Installations(ctx, u))(t)
			for _, in := range list {
				if err := e.Life.Uninstall(ctx, u, in.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := testenv.Count(t, e.DB.Read, "installations", "plugin_id = ?", "com.test.owned"); n != 0 {
			t.Fatalf("%d Installations left after purging", n)
		}
		_, err := e.Life.Install(ctx, bob, other.sign(t, m))
		wantCode(t, err, models.ErrPackageRejected, "com.test.owned", owner, otherID)

		// A plugin id the second key installs first is its own.
		theirs := fixture.Manifest("com.test.theirs", fixture.NS("notes", 1024))
		must(e.Life.Install(ctx, bob, other.sign(t, theirs)))(t)
		_, err = e.Life.Install(ctx, alice, e.Package(t, theirs, nil))
		wantCode(t, err, models.ErrPackageRejected, "com.test.theirs", owner, otherID)
	})
}

// TestFirstInstallsRace: two publishers install a new plugin id at once, for
// different users; one key owns it, and every Installation is that key's.
// Run it with -race.
func TestFirstInstallsRace(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		other := otherPublisher(t, e)
		m := fixture.Manifest("com.test.race", fixture.NS("notes", 1024))
		pkgs := [][]byte{e.Package(t, m, nil), other.sign(t, m)}
		const n = 8
		users := make([]*models.User, n)
		for i := range users {
			users[i] = e.User(t, "user"+string(rune('a'+i)))
		}
		var wg sync.WaitGroup
		keys := make([]string, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				instl, err := e.Life.Install(ctx, users[i], pkgs[i%2])
				if err == nil {
					keys[i] = instl.PublisherKeyID
				}
				errs[i] = err
			})
		}
		wg.Wait()
		winner := ""
		for i, err := range errs {
			switch {
			case err == nil && winner == "":
				winner = keys[i]
			case err == nil && keys[i] != winner:
				t.Fatalf("installed by two keys: %s and %s", winner, keys[i])
			case err != nil && models.ErrorCode(err) != models.ErrPackageRejected:
				t.Fatalf("install %d: %v", i, err)
			}
		}
		if winner == "" {
			t.Fatal("no install succeeded")
		}
		var owners []string
		e.DB.Read.Table("plugin_owners").Where("plugin_id = ?", "com.test.race").Pluck("publisher_key_id", &owners)
		if len(owners) != 1 || owners[0] != winner {
			t.Fatalf("owners %v, want [%s]", owners, winner)
		}
	})
}
