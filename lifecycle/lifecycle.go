// Package lifecycle installs plugins and manages their Installations and
// Instances: install from a signed package, Instances, enabling, grants, and
// the publisher keys the host trusts.
package lifecycle

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/access"
	"pluginhost/bundle"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/extensions"
	"pluginhost/models"
	"pluginhost/storage"
	"pluginhost/validator"
)

// Service manages Installations and Instances.
type Service struct {
	DB  *database.DB
	Bus changes.Publisher
	// Storage migrates stored data when a package changes.
	Storage *storage.Service
	Log     *slog.Logger
	// TrustedKeys are the publisher keys trusted through --trusted-keys, by id.
	// Keys trusted by an admin through GraphQL are kept in the database.
	TrustedKeys map[string]ed25519.PublicKey
	// Modules, when set, compiles a package's capability modules before it
	// is installed, so that a module the host cannot run is refused then.
	Modules ModuleCompiler
	// Gate decides which Instances a user may manage; it forgets an
	// Installation's manifests when its package changes or it is
	// uninstalled.
	Gate *access.Gate
}

// ModuleCompiler compiles capability modules.
type ModuleCompiler interface {
	// CompileModule compiles a module, or refuses it with the reason (a
	// structural limit it passes, its compilation budget). When ctx ends
	// first, it returns and the compilation goes on.
	CompileModule(ctx context.Context, wasm []byte) error
	// QuickModule makes a module ready to run at once, in the host's
	// interpreter, its compilation to follow, or refuses it with the
	// reason: for the packages of pluginhost dev, whose author waits.
	QuickModule(ctx context.Context, wasm []byte) error
	// ForgetModule says that the module of a SHA-256 sum (hex) that
	// QuickModule made ready is no longer needed: the package that held it
	// was replaced. Its compilation, if not begun, does not begin.
	ForgetModule(sum string)
}

// MaxInstanceNameLength bounds Instance names, in characters.
const MaxInstanceNameLength = 200

// Grantable permissions of an Instance.
var grantable = []string{models.PermissionNetwork, models.PermissionNotifications}

// OpenPackage verifies a signed package, checks that its publisher key is
// trusted, validates the plugin it holds and compiles its modules
// (compileModules).
func (s *Service) OpenPackage(ctx context.Context, data []byte) (*bundle.Package, *models.Manifest, error) {
	pkg, m, modules, err := s.openPackage(ctx, data)
	if err != nil {
		return nil, nil, err
	}
	if err := modules.wait(); err != nil {
		return nil, nil, err
	}
	return pkg, m, nil
}

// openPackage is OpenPackage, but for the compilation of the modules, which
// it begins and leaves under way.
func (s *Service) openPackage(ctx context.Context, data []byte) (*bundle.Package, *models.Manifest, *compilations, error) {
	pkg, err := bundle.Open(data)
	if err != nil {
		return nil, nil, nil, err
	}
	trusted, err := s.trusted(ctx, pkg.KeyID)
	if err != nil {
		return nil, nil, nil, err
	}
	if !trusted {
		return nil, nil, nil, models.Errorf(models.ErrPackageRejected, "publisher key %s is not trusted by this host; an admin can trust it with trustPublisherKey or --trusted-keys", pkg.KeyID)
	}
	// A development package's modules begin to be made ready now, while
	// the plugin is validated (its author waits for the install); any
	// other package's once it is valid, for their compilation takes
	// seconds.
	var modules *compilations
	if dev, ok := developmentManifest(pkg); ok {
		modules = s.startModules(ctx, pkg, dev)
	}
	m, report := validator.CheckPlugin(pkg.Files)
	if err := report.Err("the plugin"); err != nil {
		return nil, nil, nil, err
	}
	if err := checkHostVersion(m); err != nil {
		return nil, nil, nil, err
	}
	recordModuleSums(pkg, m)
	if modules == nil {
		modules = s.startModules(ctx, pkg, m)
	}
	return pkg, m, modules, nil
}

// developmentManifest is the manifest of a development package, decoded
// but not yet validated; ok is false for any other package.
func developmentManifest(pkg *bundle.Package) (m *models.Manifest, ok bool) {
	if err := json.Unmarshal(pkg.Files[validator.ManifestFile], &m); err != nil || m == nil {
		return nil, false
	}
	return m, models.IsDevelopmentVersion(m.Version)
}

// startModules begins the compilation of the package's modules
// (compileModules).
func (s *Service) startModules(ctx context.Context, pkg *bundle.Package, m *models.Manifest) *compilations {
	c := &compilations{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = s.compileModules(ctx, pkg, m)
	}()
	return c
}

// compilations is the compilation of a package's modules (compileModules)
// under way.
type compilations struct {
	done chan struct{}
	err  error
}

// wait waits for the compilations and returns how they ended, the same
// each time.
func (c *compilations) wait() error {
	<-c.done
	return c.err
}

// waitOutside waits for the compilations of a package that is not a
// development package before its transaction begins: that wait, up to
// InstallCompileWait, must not hold the transaction's locks. A development
// package's modules are made ready in the interpreter, in a fraction of
// that, while its transaction stores it (its author waits for the
// install): the transaction waits for them before it commits, and stores
// nothing when one cannot run.
func (c *compilations) waitOutside(m *models.Manifest) error {
	if models.IsDevelopmentVersion(m.Version) {
		return nil
	}
	return c.wait()
}

// InstallCompileWait is how long an install or update waits, in all, for
// its modules to compile; past it the install goes on, and so do the
// compilations.
const InstallCompileWait = 20 * time.Second

// compileModules compiles every module the package's capabilities name,
// waiting InstallCompileWait at most (less when the request's deadline is
// nearer); a development package's are only made ready to run, in the
// interpreter, and compile later unless an update replaces them first
// (forgetReplaced).
func (s *Service) compileModules(ctx context.Context, pkg *bundle.Package, m *models.Manifest) error {
	if s.Modules == nil {
		return nil
	}
	// At most InstallCompileWait, and at most half of what the request has
	// left: the install answers in time on a loaded machine, and the
	// compilations go on.
	limit := InstallCompileWait
	if d, ok := ctx.Deadline(); ok && time.Until(d)/2 < limit {
		limit = time.Until(d) / 2
	}
	wait, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := map[string]bool{}
	for _, c := range m.Capabilities {
		if c.Module == "" || done[c.Module] {
			continue
		}
		done[c.Module] = true
		compile := s.Modules.CompileModule
		if models.IsDevelopmentVersion(m.Version) {
			compile = s.Modules.QuickModule
		}
		err := compile(wait, pkg.Files[c.Module])
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case wait.Err() != nil:
			// Still compiling, or not begun: the compilations go on.
		case err != nil:
			return models.Errorf(models.ErrPackageRejected, "capability %s: module %s cannot run: %v", c.ID, c.Module, err)
		}
	}
	return nil
}

// checkHostVersion refuses a package whose min_host_version is newer than
// this host's version (models.HostVersion); an equal version installs.
func checkHostVersion(m *models.Manifest) error {
	if m.MinHostVersion != "" && models.CompareVersions(m.MinHostVersion, models.HostVersion) > 0 {
		return models.Errorf(models.ErrPackageRejected, "plugin %s %s needs host version %s or newer (min_host_version); this host is version %s",
			m.ID, m.Version, m.MinHostVersion, models.HostVersion)
	}
	return nil
}

// manifestJSON is the stored form of a validated manifest: compact, with
// every string (such as capability schemas) as the package wrote it.
func manifestJSON(m *models.Manifest) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(m) // a decoded manifest always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

func (s *Service) trusted(ctx context.Context, keyID string) (bool, error) {
	if _, ok := s.TrustedKeys[keyID]; ok {
		return true, nil
	}
	var n int64
	err := s.DB.Read.WithContext(ctx).Model(&database.TrustedKeyRow{}).Where("id = ?", keyID).Count(&n).Error
	return n > 0, err
}

// TrustKey trusts a publisher key; admins only. It returns the key id.
func (s *Service) TrustKey(ctx context.Context, admin *models.User, publicKey string) (string, error) {
	if !admin.Admin {
		return "", models.Errorf(models.ErrForbidden, "only admins may trust publisher keys")
	}
	pub, err := bundle.ParsePublicKey(publicKey)
	if err != nil {
		return "", models.Errorf(models.ErrBadUserInput, "publicKey: %v", err)
	}
	id := bundle.KeyID(pub)
	row := database.TrustedKeyRow{ID: id, PublicKey: bundle.FormatPublicKey(pub), AddedBy: admin.ID, CreatedAt: time.Now().UnixMicro()}
	err = s.DB.Write.WithContext(ctx).Create(&row).Error
	if err != nil && !database.IsDuplicate(err) {
		return "", err
	}
	s.log().Info("publisher key trusted", "key_id", id, "by", admin.ID)
	return id, nil
}

// Install installs a signed package for the user. A plugin the user
// uninstalled with data_policy retain comes back as the same Installation,
// with the same id, Instances and stored data, at the next generation (its
// storage migrated if the package raises the storage version). Otherwise the
// Installation is new, at generation 1.
func (s *Service) Install(ctx context.Context, user *models.User, data []byte) (*models.Installation, error) {
	pkg, m, modules, err := s.openPackage(ctx, data)
	if err != nil {
		return nil, err
	}
	if err := modules.waitOutside(m); err != nil {
		return nil, err
	}
	manifest := manifestJSON(m)
	now := time.Now().UnixMicro()
	row := database.InstallationRow{
		ID: models.NewID(models.PrefixInstallation), UserID: user.ID, PluginID: m.ID, Name: m.Name, Version: m.Version,
		PublisherKeyID: pkg.KeyID, Generation: 1, StorageVersion: storageVersion(m), DataPolicy: dataPolicy(m),
		Status: models.InstallationInstalled, Manifest: manifest, PackageSHA256: pkg.SHA256, CreatedAt: now, UpdatedAt: now,
	}
	restored := false
	var changes []models.StorageChange
	fresh := row
	install := func(tx *gorm.DB) error {
		row, restored, changes = fresh, false, nil
		if err := claimPluginID(tx, m.ID, pkg.KeyID, now); err != nil {
			return err
		}
		var existing database.InstallationRow
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("user_id = ? AND plugin_id = ?", user.ID, m.ID).Take(&existing).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
			if err := extensions.StoreConfigs(tx, row.ID, row.Generation, m, pkg.Files); err != nil {
				return err
			}
			return storeModules(tx, row.ID, row.Generation, pkg, m)
		case err != nil:
			return err
		case existing.Status == models.InstallationInstalled:
			return models.Errorf(models.ErrBadUserInput, "plugin %s is already installed as %s; use updatePlugin to change its version", m.ID, existing.ID)
		}
		restored = true
		row = existing
		changes, err = s.replacePackage(ctx, tx, &row, pkg, m)
		return err
	}
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		if err := install(tx); err != nil {
			return err
		}
		return modules.wait() // waitOutside
	})
	if err != nil {
		if database.IsDuplicate(err) {
			return nil, models.Errorf(models.ErrBadUserInput, "plugin %s is already installed; use updatePlugin to change its version", m.ID)
		}
		return nil, err
	}
	if restored {
		s.Gate.Forget(row.ID)
	}
	s.publish(changes)
	if restored {
		s.log().Info("plugin reinstalled with its retained data", "installation", row.ID, "plugin", m.ID, "version", m.Version,
			"generation", row.Generation, "user", user.ID, "publisher_key", pkg.KeyID)
	} else {
		s.log().Info("plugin installed", "installation", row.ID, "plugin", m.ID, "version", m.Version, "user", user.ID, "publisher_key", pkg.KeyID)
	}
	return row.Model()
}

// claimPluginID makes keyID the owner of pluginID on this server when no
// key owns it yet (the first install), and refuses a package of a plugin id
// another publisher key owns. It locks the owner's row first, before the
// Installation (the lock order of package database).
func claimPluginID(tx *gorm.DB, pluginID, keyID string, now int64) error {
	claim := database.PluginOwnerRow{PluginID: pluginID, PublisherKeyID: keyID, CreatedAt: now}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&claim).Error; err != nil {
		return err
	}
	var owner database.PluginOwnerRow
	if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Where("plugin_id = ?", pluginID).Take(&owner).Error; err != nil {
		return err
	}
	if owner.PublisherKeyID != keyID {
		return models.Errorf(models.ErrPackageRejected, "plugin id %s belongs on this server to publisher key %s, which first installed it; this package is signed by publisher key %s. A publisher installs its own plugin ids only: choose another id",
			pluginID, owner.PublisherKeyID, keyID)
	}
	return nil
}

func storageVersion(m *models.Manifest) int {
	if st := m.EffectiveStorage(); st != nil {
		return st.Version
	}
	return 0
}

// dataPolicy is the manifest's data_policy; retain when a legacy plugin omits
// it, so that nothing is lost by default.
func dataPolicy(m *models.Manifest) string {
	if m.DataPolicy == "" {
		return models.DataPolicyRetain
	}
	return m.DataPolicy
}

// Installations returns the user's installed plugins, oldest first.
func (s *Service) Installations(ctx context.Context, user *models.User) ([]*models.Installation, error) {
	var rows []database.InstallationRow
	if err := s.DB.Read.WithContext(ctx).Where("user_id = ? AND status = ?", user.ID, models.InstallationInstalled).
		Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*models.Installation, 0, len(rows))
	for _, r := range rows {
		m, err := r.Model()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Installation returns one of the user's installed plugins. Another user's
// Installation and an unknown id look the same.
func (s *Service) Installation(ctx context.Context, user *models.User, id string) (*models.Installation, error) {
	var row database.InstallationRow
	err := s.DB.Read.WithContext(ctx).Where("id = ? AND user_id = ? AND status = ?", id, user.ID, models.InstallationInstalled).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrPermissionDenied, "installation %q does not exist or does not belong to you", id)
	}
	if err != nil {
		return nil, err
	}
	return row.Model()
}

// CreateInstance adds an Instance to one of the user's Installations. It
// locks the Installation's row (the first lock of the lock order of package
// database) while it adds the Instance, so an uninstall running at the same
// time either comes after and deletes the new Instance with the others, or
// comes first, and then the Installation is refused: an Instance is never
// left behind, nor answered, for an Installation that is gone.
func (s *Service) CreateInstance(ctx context.Context, user *models.User, installationID, name string) (*models.Instance, error) {
	name = strings.TrimSpace(name)
	var row database.InstanceRow
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		var locked database.InstallationRow
		err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Select("id", "name").
			Where("id = ? AND user_id = ? AND status = ?", installationID, user.ID, models.InstallationInstalled).Take(&locked).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.Errorf(models.ErrPermissionDenied, "installation %q does not exist or does not belong to you", installationID)
		}
		if err != nil {
			return err
		}
		row = database.InstanceRow{ID: models.NewID(models.PrefixInstance), InstallationID: locked.ID, UserID: user.ID,
			Name: cmp.Or(name, locked.Name), Enabled: true, CreatedAt: time.Now().UnixMicro()}
		if err := checkName(row.Name); err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		return nil, err
	}
	s.log().Info("instance created", "instance", row.ID, "installation", row.InstallationID, "user", user.ID)
	return row.Model(), nil
}

func checkName(name string) error {
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxInstanceNameLength {
		return models.Errorf(models.ErrBadUserInput, "name must have 1 to %d characters", MaxInstanceNameLength)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return models.Errorf(models.ErrBadUserInput, "name may not contain control characters")
		}
	}
	return nil
}

// Instance returns one of the user's Instances of an installed plugin. Another
// user's Instance and an unknown id look the same.
func (s *Service) Instance(ctx context.Context, user *models.User, id string) (*models.Instance, error) {
	r, err := s.Gate.Read(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := access.Decide(models.Caller{UserID: user.ID}, id, r, access.Manage); err != nil {
		return nil, err
	}
	return &r.Instance, nil
}

// ReportDevelopment tells the open surfaces of one of the user's
// Installations why the author's latest change was not installed (what
// pluginhost dev reports): the watchers of each of its Instances get an
// OpDevelopment change with the message. Nothing is stored. It returns how
// many Instances were told.
func (s *Service) ReportDevelopment(ctx context.Context, user *models.User, installationID, message string) (int, error) {
	message = strings.TrimSpace(message)
	if message == "" || len(message) > models.MaxDevelopmentMessage {
		return 0, models.Errorf(models.ErrBadUserInput, "message has %d bytes; it has 1 to %d", len(message), models.MaxDevelopmentMessage)
	}
	instl, err := s.Installation(ctx, user, installationID)
	if err != nil {
		return 0, err
	}
	instances, err := s.Instances(ctx, instl.ID)
	if err != nil {
		return 0, err
	}
	changes := make([]models.StorageChange, len(instances))
	for i, in := range instances {
		changes[i] = models.StorageChange{InstanceID: in.ID, UserID: user.ID, InstallationID: instl.ID,
			Operation: models.OpDevelopment, Generation: instl.Generation, Message: &message}
	}
	s.publish(changes)
	return len(instances), nil
}

// Instances returns the Instances of one Installation, oldest first.
func (s *Service) Instances(ctx context.Context, installationID string) ([]*models.Instance, error) {
	var rows []database.InstanceRow
	if err := s.DB.Read.WithContext(ctx).Where("installation_id = ?", installationID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*models.Instance, len(rows))
	for i, r := range rows {
		out[i] = r.Model()
	}
	return out, nil
}

// SetInstanceGrant grants or revokes a permission on an Instance. The manifest
// must request the permission. Notifications are granted unless revoked:
// revoking mutes the Instance's notifications.
func (s *Service) SetInstanceGrant(ctx context.Context, user *models.User, instanceID, permission string, granted bool) (*models.Instance, error) {
	found := false
	for _, g := range grantable {
		found = found || g == permission
	}
	if !found {
		return nil, models.Errorf(models.ErrBadUserInput, "permission %q cannot be granted to an Instance; grantable: %s", permission, strings.Join(grantable, ", "))
	}
	inst, err := s.Instance(ctx, user, instanceID)
	if err != nil {
		return nil, err
	}
	if granted {
		instl, err := s.Installation(ctx, user, inst.InstallationID)
		if err != nil {
			return nil, err
		}
		if !instl.Manifest.HasPermission(permission) {
			return nil, models.Errorf(models.ErrForbidden, "plugin %s does not request the %s permission, so it cannot be granted", instl.PluginID, permission)
		}
	}
	if permission == models.PermissionNotifications {
		// Notifications are on unless the user mutes them: the grant is
		// the absence of the mute.
		if err := database.Retry(ctx, func() error {
			return s.DB.Write.WithContext(ctx).Model(&database.InstanceRow{}).Where("id = ?", inst.ID).Update("notifications_muted", !granted).Error
		}); err != nil {
			return nil, err
		}
		inst.NotificationsMuted = !granted
		s.log().Info("instance notifications muted", "instance", inst.ID, "muted", !granted, "user", user.ID)
		return inst, nil
	}
	grants := inst.Grants
	if granted {
		grants = append(grants, permission)
	} else {
		kept := grants[:0:0]
		for _, g := range grants {
			if g != permission {
				kept = append(kept, g)
			}
		}
		grants = kept
	}
	joined := database.JoinGrants(grants)
	if err := database.Retry(ctx, func() error {
		return s.DB.Write.WithContext(ctx).Model(&database.InstanceRow{}).Where("id = ?", inst.ID).Update("grants", joined).Error
	}); err != nil {
		return nil, err
	}
	inst.Grants = database.SplitGrants(joined)
	s.log().Info("instance grant changed", "instance", inst.ID, "permission", permission, "granted", granted, "user", user.ID)
	return inst, nil
}

// accessChanged tells watchers of Instances that their access must be checked
// again.
func (s *Service) accessChanged(instanceIDs ...string) {
	if s.Bus == nil {
		return
	}
	for _, id := range instanceIDs {
		s.Bus.Publish(models.StorageChange{InstanceID: id, Operation: models.OpAccess})
	}
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Usage is the storage an Instance's namespace holds.
type Usage struct {
	Namespace string
	Keys      int64
	Bytes     int64
	MaxBytes  int
}

// InstanceUsage returns the keys and bytes each declared namespace of an
// Instance holds.
func (s *Service) InstanceUsage(ctx context.Context, inst *models.Instance, instl *models.Installation) ([]Usage, error) {
	st := instl.Manifest.EffectiveStorage()
	if st == nil {
		return []Usage{}, nil
	}
	var rows []struct {
		Namespace string
		Keys      int64
		Bytes     int64
	}
	if err := s.DB.Read.WithContext(ctx).Model(&database.ItemRow{}).
		Select("namespace, COUNT(*) AS `keys`, COALESCE(SUM(size), 0) AS bytes").
		Where("instance_id = ?", inst.ID).Group("namespace").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("usage of %s: %w", inst.ID, err)
	}
	out := make([]Usage, len(st.Namespaces))
	for i, n := range st.Namespaces {
		out[i] = Usage{Namespace: n.ID, MaxBytes: n.MaxBytes}
		for _, r := range rows {
			if r.Namespace == n.ID {
				out[i].Keys, out[i].Bytes = r.Keys, r.Bytes
			}
		}
	}
	return out, nil
}

// SetInstanceEnabled disables or re-enables an Instance. A disabled Instance
// keeps its data and its storage revision, but nothing may read or write it by
// any path. Re-enabling restores access to the same data, unchanged.
func (s *Service) SetInstanceEnabled(ctx context.Context, user *models.User, instanceID string, enabled bool) (*models.Instance, error) {
	inst, err := s.Instance(ctx, user, instanceID)
	if err != nil {
		return nil, err
	}
	if inst.Enabled != enabled {
		if err := database.Retry(ctx, func() error {
			return s.DB.Write.WithContext(ctx).Model(&database.InstanceRow{}).Where("id = ?", inst.ID).Update("enabled", enabled).Error
		}); err != nil {
			return nil, err
		}
		inst.Enabled = enabled
		s.accessChanged(inst.ID)
		s.log().Info("instance enabled changed", "instance", inst.ID, "enabled", enabled, "user", user.ID)
	}
	return inst, nil
}

// SetAIConsent records the user's grant (or withdrawal) of ai_storage for an
// Installation. The manifest must request ai_storage. After the grant the AI
// is not asked per call; every call is still checked.
func (s *Service) SetAIConsent(ctx context.Context, user *models.User, installationID string, granted bool) (*models.Installation, error) {
	instl, err := s.Installation(ctx, user, installationID)
	if err != nil {
		return nil, err
	}
	if granted && !instl.Manifest.HasPermission(models.PermissionAIStorage) {
		return nil, models.Errorf(models.ErrForbidden, "plugin %s does not request the ai_storage permission, so it cannot be granted", instl.PluginID)
	}
	if err := database.Retry(ctx, func() error {
		return s.DB.Write.WithContext(ctx).Model(&database.InstallationRow{}).Where("id = ?", instl.ID).
			Updates(map[string]any{"ai_consent": granted, "updated_at": time.Now().UnixMicro()}).Error
	}); err != nil {
		return nil, err
	}
	instl.AIConsent = granted
	s.log().Info("ai_storage consent changed", "installation", instl.ID, "plugin", instl.PluginID, "granted", granted, "user", user.ID)
	return instl, nil
}
