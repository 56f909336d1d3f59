package storage_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"pluginhost/internal/fixture"
	"pluginhost/internal/testenv"
	"pluginhost/models"
)

// TestConcurrentReadModifyWrite: 32 writers increment one counter with
// get + update, retrying on CONFLICT. No update may be lost.
func TestConcurrentReadModifyWrite(t *testing.T) {
	const writers, increments = 32, 5
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		c := models.Caller{UserID: alice.ID}
		inst := e.Instance(t, alice, e.Install(t, alice, fixture.Manifest("com.test.counter", fixture.NS("c", 1024))))
		if _, err := e.Store.Create(ctx, c, inst.ID, "c", "counter", js(0)); err != nil {
			t.Fatal(err)
		}
		sub := e.Changes(t, alice, inst.ID)
		var conflicts atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < increments; {
					res, err := e.Store.Get(ctx, c, inst.ID, "c", "counter")
					if err != nil {
						errs <- err
						return
					}
					var d models.ItemData
					json.Unmarshal(res.Data, &d)
					n, _ := strconv.Atoi(string(d.Item.Value))
					_, err = e.Store.Update(ctx, c, inst.ID, "c", "counter", js(n+1), d.Item.Revision)
					switch models.ErrorCode(err) {
					case "":
						done++
					case models.ErrConflict:
						conflicts.Add(1)
					default:
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		res, err := e.Store.Get(ctx, c, inst.ID, "c", "counter")
		if err != nil {
			t.Fatal(err)
		}
		var d models.ItemData
		json.Unmarshal(res.Data, &d)
		if string(d.Item.Value) != strconv.Itoa(writers*increments) || d.Item.Revision != writers*increments+1 {
			t.Fatalf("counter = %s at revision %d, want %d at %d", d.Item.Value, d.Item.Revision, writers*increments, writers*increments+1)
		}
		// Every committed change was published, in storage revision order;
		// a subscriber that fell behind lost the oldest it had not read, and
		// ends on the latest revision.
		latest := int64(writers*increments + 1)
		for last := int64(1); last < latest; {
			ch, ok := sub.Next(ctx)
			if !ok {
				t.Fatal("subscription ended")
			}
			if ch.StorageRevision <= last {
				t.Fatalf("event revision %d after %d: out of order", ch.StorageRevision, last)
			}
			last = ch.StorageRevision
		}
		t.Logf("%d writers x %d increments, %d conflicts retried", writers, increments, conflicts.Load())
	})
}

// TestConcurrentCreatesHoldQuotas: parallel creates never push a namespace over
// its keys or bytes, nor the Installation over 512 KiB.
func TestConcurrentCreatesHoldQuotas(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		e := fixture.New(t, b)
		alice := e.User(t, "alice")
		c := models.Caller{UserID: alice.ID}
		instl := e.Install(t, alice, fixture.Manifest("com.test.race", fixture.NS("bytes", 10000), fixture.NS("keys", 4096), fixture.NS("fill", 262144)))
		insts := []*models.Instance{e.Instance(t, alice, instl), e.Instance(t, alice, instl), e.Instance(t, alice, instl)}
		const workers = 32
		value := js(fmt.Sprintf("%0100d", 0)) // 102 bytes; a key of 6 bytes: 108 per item

		race := func(inst string, ns string, perWorker int, val models.JSON) (ok, quota int64) {
			var okN, quotaN atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWorker {
						_, err := e.Store.Create(ctx, c, inst, ns, fmt.Sprintf("w%02di%02d", w, i)[:6], val)
						switch models.ErrorCode(err) {
						case "":
							okN.Add(1)
						case models.ErrQuotaExceeded:
							quotaN.Add(1)
						default:
							t.Errorf("create: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			return okN.Load(), quotaN.Load()
		}
		usage := func(inst, ns string) (keys, bytes int64) {
			var u struct{ Keys, Bytes int64 }
			e.DB.Read.Raw("SELECT COUNT(*) AS `keys`, COALESCE(SUM(size),0) AS bytes FROM storage_items WHERE instance_id = ? AND namespace = ?", inst, ns).Scan(&u)
			return u.Keys, u.Bytes
		}

		// Bytes: 10000 / 108 = 92 items fit.
		ok, quota := race(insts[0].ID, "bytes", 4, value)
		keys, bytes := usage(insts[0].ID, "bytes")
		if ok != 92 || keys != 92 || bytes > 10000 || quota != workers*4-92 {
			t.Fatalf("bytes race: %d created, %d refused, namespace holds %d keys / %d bytes", ok, quota, keys, bytes)
		}
		// Keys: 320 attempts, 256 fit.
		small := js(1)
		ok, _ = race(insts[1].ID, "keys", 10, small)
		keys, _ = usage(insts[1].ID, "keys")
		if ok != models.MaxKeysPerNamespace || keys != models.MaxKeysPerNamespace {
			t.Fatalf("keys race: %d created, namespace holds %d keys", ok, keys)
		}
		// Installation: three Instances race to fill 512 KiB with 32 KiB values.
		big := js(fmt.Sprintf("%032000d", 0))
		var wg sync.WaitGroup
		for _, inst := range insts {
			wg.Add(1)
			go func() { defer wg.Done(); race(inst.ID, "fill", 1, big) }()
		}
		wg.Wait()
		var total int64
		e.DB.Read.Raw("SELECT COALESCE(SUM(size),0) FROM storage_items WHERE installation_id = ?", instl.ID).Scan(&total)
		now, _ := e.Life.Installation(ctx, alice, instl.ID)
		if total > models.MaxInstallationBytes || now.UsedBytes != total {
			t.Fatalf("installation holds %d bytes (counter %d), limit %d", total, now.UsedBytes, models.MaxInstallationBytes)
		}
		if total < models.MaxInstallationBytes-32100 {
			t.Fatalf("installation holds only %d bytes; the race refused creates that fit", total)
		}
	})
}
