package migrations_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"pluginhost/database"
	"pluginhost/internal/testenv"
	"pluginhost/migrations"
)

func TestApply(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db, err := database.Open(b.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		log := slog.New(slog.DiscardHandler)
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatalf("first apply: %v", err)
		}
		// A second start finds everything applied and changes nothing.
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatalf("second apply: %v", err)
		}
		if n := testenv.Count(t, db.Read, "schema_migrations", ""); n != int64(len(migrations.All)) {
			t.Fatalf("recorded %d migrations, want %d", n, len(migrations.All))
		}
		for _, table := range []string{"users", "tokens", "trusted_keys", "installations", "instances", "storage_items", "installation_credentials", "oauth_states", "pending_actions", "storage_audit", "extension_configs", "extension_states", "response_containers"} {
			if !db.Read.Migrator().HasTable(table) {
				t.Errorf("table %s missing", table)
			}
		}
		// A database migrated by a newer binary is refused, not damaged.
		if err := db.Write.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", 9999, "future", 1).Error; err != nil {
			t.Fatal(err)
		}
		err = migrations.Apply(ctx, db, log)
		if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
			t.Fatalf("apply on a newer database: %v", err)
		}
	})
}

// TestVersionsAscend: versions ascend from 1. Numbers are handed out to
// branches in advance, so a branch may lack the versions of others until they
// are merged; once merged they ascend by one.
func TestVersionsAscend(t *testing.T) {
	prev := 0
	for i, m := range migrations.All {
		if m.Version <= prev {
			t.Fatalf("migration %d has version %d after %d; versions ascend from 1", i, m.Version, prev)
		}
		prev = m.Version
		if m.Name == "" || m.Up == nil {
			t.Fatalf("migration %d lacks a name or an Up", m.Version)
		}
	}
}

// TestTokenIDsForOldTokens: version 7 gives every token made before it an
// id of its own, and leaves it unexpired, unused and not revoked.
func TestTokenIDsForOldTokens(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db := migratedBefore(t, b, 7)
		log := slog.New(slog.DiscardHandler)
		for _, h := range []string{strings.Repeat("a", 64), strings.Repeat("b", 64)} {
			if err := db.Write.Exec("INSERT INTO tokens (hash, user_id, created_at) VALUES (?, ?, ?)", h, "usr_x", 1).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatal(err)
		}
		var rows []database.TokenRow
		if err := db.Read.Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].ID == rows[1].ID {
			t.Fatalf("tokens %+v: want two with distinct ids", rows)
		}
		for _, r := range rows {
			if !strings.HasPrefix(r.ID, "tok_") || r.ExpiresAt != 0 || r.LastUsedAt != 0 || r.RevokedAt != 0 {
				t.Fatalf("token %+v: want an id, no expiry, no use, not revoked", r)
			}
		}
	})
}

// TestIssuerUsersOfAnExistingDatabase: version 14 keeps every user of
// before as a token user (the empty issuer, the name as subject), after
// which a user of an identity provider may share a token user's name, and
// (issuer, subject) is one user.
func TestIssuerUsersOfAnExistingDatabase(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db := migratedBefore(t, b, 14)
		log := slog.New(slog.DiscardHandler)
		if err := db.Write.Exec("INSERT INTO users (id, name, admin, created_at) VALUES ('usr_a', 'alice', 1, 1)").Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Write.Exec("INSERT INTO web_sessions (id_hash, user_id, created_at, expires_at) VALUES ('h', 'usr_a', 1, 2)").Error; err != nil {
			t.Fatal(err)
		}
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatal(err)
		}
		var u database.UserRow
		if err := db.Read.Where("id = ?", "usr_a").Take(&u).Error; err != nil || u.Issuer != "" || u.Subject != "alice" || u.Name != "alice" || !u.Admin {
			t.Fatalf("the user of before: %+v %v", u, err)
		}
		var s database.WebSessionRow
		if err := db.Read.Where("id_hash = ?", "h").Take(&s).Error; err != nil || s.Admin || s.EndHint != nil {
			t.Fatalf("the session of before: %+v %v", s, err)
		}
		insert := func(id, name, issuer, subject string) error {
			return db.Write.Exec("INSERT INTO users (id, name, admin, created_at, issuer, subject) VALUES (?, ?, 0, 2, ?, ?)", id, name, issuer, subject).Error
		}
		if err := insert("usr_b", "alice", "https://id.example.com", "sub-1"); err != nil {
			t.Fatalf("an issuer's alice beside the token user alice: %v", err)
		}
		if err := insert("usr_c", "alice", "https://id.example.com", "sub-2"); err != nil {
			t.Fatalf("two issuer users named alice: %v", err)
		}
		if err := insert("usr_d", "other", "https://id.example.com", "sub-1"); !database.IsDuplicate(err) {
			t.Fatalf("a second user of one (issuer, subject): %v", err)
		}
		if err := insert("usr_e", "alice", "", "alice"); !database.IsDuplicate(err) {
			t.Fatalf("a second token user alice: %v", err)
		}
	})
}

// TestPublishersOfExistingPlugins: version 15 gives every plugin id installed
// before it the key of its oldest Installation, and binds every OAuth client
// set before it to the URLs of the newest installed package of its plugin
// by that key; a client whose plugin is not installed is bound to nothing
// (unusable until an admin sets it again).
func TestPublishersOfExistingPlugins(t *testing.T) {
	testenv.Databases(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		db := migratedBefore(t, b, 15)
		log := slog.New(slog.DiscardHandler)
		manifest := func(token string) string {
			return `{"id":"com.test.p","connections":[{"id":"gh","kind":"oauth2","oauth2":{"authorization_url":"https://a.example/auth","token_url":"` + token + `"}}]}`
		}
		for _, in := range []struct {
			id, user, plugin, version, key, status, manifest string
			created, updated                                 int64
		}{
			{"inl_b", "usr_2", "com.test.p", "3.0.0", "keyB", "installed", manifest("https://evil.example/token"), 2, 9},
			{"inl_a", "usr_1", "com.test.p", "1.0.0", "keyA", "installed", manifest("https://a.example/token-old"), 1, 3},
			{"inl_c", "usr_3", "com.test.p", "1.10.0", "keyA", "installed", manifest("https://a.example/token"), 5, 2},
			{"inl_d", "usr_3", "com.test.gone", "1.0.0", "keyC", "uninstalled", `{"id":"com.test.gone"}`, 1, 1},
		} {
			if err := db.Write.Exec(`INSERT INTO installations (id, user_id, plugin_id, name, version, publisher_key_id, generation, storage_version,
				data_policy, status, manifest, package_sha256, created_at, updated_at) VALUES (?, ?, ?, 'P', ?, ?, 1, 0, 'retain', ?, ?, '', ?, ?)`,
				in.id, in.user, in.plugin, in.version, in.key, in.status, in.manifest, in.created, in.updated).Error; err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct{ plugin, conn string }{{"com.test.p", "gh"}, {"com.test.gone", "gh"}} {
			if err := db.Write.Exec("INSERT INTO oauth_clients (plugin_id, connection, client_id, client_secret, updated_at) VALUES (?, ?, 'id', ?, 1)",
				c.plugin, c.conn, []byte("sealed")).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := migrations.Apply(ctx, db, log); err != nil {
			t.Fatal(err)
		}
		var owners []database.PluginOwnerRow
		db.Read.Order("plugin_id").Find(&owners)
		if len(owners) != 2 || owners[0].PluginID != "com.test.gone" || owners[0].PublisherKeyID != "keyC" ||
			owners[1].PluginID != "com.test.p" || owners[1].PublisherKeyID != "keyA" {
			t.Fatalf("owners %+v: want com.test.p to keyA (its oldest Installation), com.test.gone to keyC", owners)
		}
		var clients []database.OAuthClientRow
		db.Read.Order("plugin_id").Find(&clients)
		if len(clients) != 2 || clients[0].TokenURL != "" || clients[0].AuthorizationURL != "" ||
			clients[1].TokenURL != "https://a.example/token" || clients[1].AuthorizationURL != "https://a.example/auth" {
			t.Fatalf("clients %+v: want com.test.p bound to keyA's newest version (1.10.0), com.test.gone to nothing", clients)
		}
	})
}

// migratedBefore opens the backend's database with every migration before
// version applied, as a server of that time left it.
func migratedBefore(t *testing.T, b testenv.Backend, version int) *database.DB {
	t.Helper()
	db, err := database.Open(b.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	all := migrations.All
	var before []migrations.Migration
	for _, m := range all {
		if m.Version < version {
			before = append(before, m)
		}
	}
	migrations.All = before
	err = migrations.Apply(context.Background(), db, slog.New(slog.DiscardHandler))
	migrations.All = all
	if err != nil {
		t.Fatal(err)
	}
	return db
}
