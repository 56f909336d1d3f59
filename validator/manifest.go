package validator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"pluginhost/models"
)

// Problem codes of manifests.
const (
	CodePermissionRequired = "permission_required"
	CodeStorageSchema      = "storage_schema_version"
	CodeStorageTotal       = "storage_total"
	CodeMigrationStep      = "migration_step"
	CodeUnknownNamespace   = "unknown_namespace"
	CodeInvalidKey         = "invalid_key"
	CodeMigrationEmpty     = "migration_empty"
)

// MaxManifestBytes bounds the size of manifest.json.
const MaxManifestBytes = 256 * 1024

// manifestFields are the members manifest.json may have.
var manifestFields = []string{
	"id", "name", "version", "description", "schema_version", "permissions", "data_policy",
	"storage", "capabilities", "extensions", "min_host_version", "network", "connections",
}

// knownPermissions are the permission names a manifest may request.
var knownPermissions = []string{models.PermissionStorage, models.PermissionAIStorage, models.PermissionNetwork, models.PermissionNotifications}

// versionPattern is a semantic version: MAJOR.MINOR.PATCH with an optional
// pre-release part.
var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// CheckManifest validates manifest.json and returns the parsed manifest when it
// is valid (nil otherwise) with the report.
func CheckManifest(data []byte) (*models.Manifest, *Report) {
	c := &checker{}
	if len(data) > MaxManifestBytes {
		c.errorf("", CodeTooLarge, "manifest.json has %d bytes; at most %d are allowed", len(data), MaxManifestBytes)
		return nil, c.report(nil)
	}
	doc, ok := decode(data, c)
	if doc == nil {
		return nil, c.report(nil)
	}
	c.manifest(doc.root)
	r := c.finish(doc)
	if !ok || !r.Valid {
		r.Valid = false
		return nil, r
	}
	var m models.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		// The checks above accept only documents of the manifest's shape.
		c.errorf("", CodeType, "manifest does not decode: %v", err)
		return nil, c.finish(doc)
	}
	return &m, r
}

func (c *checker) manifest(root any) {
	m := c.object("", root, manifestFields...)
	if m == nil {
		return
	}
	if v, ok := m.get("id"); !ok {
		c.errorf("/id", CodeRequired, "id is required: the plugin id, for example com.example.notes")
	} else if s, ok := c.str("/id", v); ok && !models.IsDottedIdentifier(s) {
		c.errorf("/id", CodeFormat, "%q is not a plugin id: lower-case safe identifiers (a letter, then letters, digits, _) joined by dots, at most 128 characters", s)
	}
	if v, ok := m.get("name"); !ok {
		c.errorf("/name", CodeRequired, "name is required")
	} else if s, ok := c.str("/name", v); ok && (strings.TrimSpace(s) == "" || len([]rune(s)) > 100) {
		c.errorf("/name", CodeFormat, "name must have 1 to 100 characters")
	}
	if v, ok := m.get("description"); ok {
		if s, ok := c.str("/description", v); ok && len([]rune(s)) > 2000 {
			c.errorf("/description", CodeFormat, "description has at most 2000 characters")
		}
	}
	if v, ok := m.get("version"); !ok {
		c.errorf("/version", CodeRequired, "version is required: a semantic version such as 1.0.0")
	} else if s, ok := c.str("/version", v); ok && !versionPattern.MatchString(s) {
		c.errorf("/version", CodeFormat, "%q is not a semantic version MAJOR.MINOR.PATCH (optionally -prerelease)", s)
	}
	minHost := ""
	if v, ok := m.get("min_host_version"); ok {
		if s, ok := c.str("/min_host_version", v); ok && !versionPattern.MatchString(s) {
			c.errorf("/min_host_version", CodeFormat, "%q is not a semantic version such as 1.7.12", s)
		} else {
			minHost = s
		}
	}
	schema := int64(0)
	if v, ok := m.get("schema_version"); !ok {
		c.errorf("/schema_version", CodeRequired, "schema_version is required: 2 (1 only for legacy plugins)")
	} else if n, ok := c.integer("/schema_version", v, 1, 2); ok {
		schema = n
	}
	perms := c.permissions(m)
	c.storage(m, schema, perms)
	c.connections(m, perms, c.network(m, perms))
	if v, ok := m.get("capabilities"); ok {
		c.capabilities(v, minHost)
	}
	if v, ok := m.get("extensions"); ok {
		c.extensions(v)
	}
}

// permissions checks the permission list and returns the requested names.
func (c *checker) permissions(m *object) map[string]bool {
	perms := map[string]bool{}
	v, ok := m.get("permissions")
	if !ok {
		return perms
	}
	a, ok := c.array("/permissions", v)
	if !ok {
		return perms
	}
	for i, e := range a {
		p := c.ptr("/permissions", i)
		s, ok := c.enum(p, e, knownPermissions...)
		if !ok {
			continue
		}
		if perms[s] {
			c.errorf(p, CodeDuplicate, "permission %q is listed more than once", s)
		}
		perms[s] = true
	}
	return perms
}

// storage checks data_policy and the storage declaration against the rules of
// the manifest table.
func (c *checker) storage(m *object, schema int64, perms map[string]bool) {
	decl, declared := m.get("storage")
	usesStorage := declared || perms[models.PermissionStorage]
	if v, ok := m.get("data_policy"); ok {
		c.enum("/data_policy", v, models.DataPolicyRetain, models.DataPolicyPurge)
	} else if declared {
		c.errorf("/data_policy", CodeRequired, "data_policy is required with a storage declaration: retain or purge")
	}
	if perms[models.PermissionAIStorage] && !usesStorage {
		c.errorf("/permissions", CodePermissionRequired, "ai_storage needs the storage permission and a storage declaration")
	}
	if !declared {
		if perms[models.PermissionStorage] && schema == 2 {
			c.errorf("/storage", CodeRequired, "a schema_version 2 plugin that requests storage must declare storage {version, namespaces}")
		}
		return
	}
	if schema != 0 && schema != 2 {
		c.errorf("/schema_version", CodeStorageSchema, "is %d; a storage declaration requires schema_version 2", schema)
	}
	if !perms[models.PermissionStorage] {
		c.errorf("/permissions", CodePermissionRequired, "a storage declaration requires the storage permission")
	}
	s := c.object("/storage", decl, "version", "namespaces", "migrations")
	if s == nil {
		return
	}
	version := int64(0)
	if v, ok := s.get("version"); !ok {
		c.errorf("/storage/version", CodeRequired, "storage.version is required: an integer from %d to %d", models.MinStorageVersion, models.MaxStorageVersion)
	} else if n, ok := c.integer("/storage/version", v, models.MinStorageVersion, models.MaxStorageVersion); ok {
		version = n
	}
	namespaces := c.namespaces(s, perms)
	c.migrations(s, version, namespaces)
}

// namespaces checks storage.namespaces and returns the declared ids.
func (c *checker) namespaces(s *object, perms map[string]bool) map[string]bool {
	ids := map[string]bool{}
	v, ok := s.get("namespaces")
	if !ok {
		c.errorf("/storage/namespaces", CodeRequired, "storage.namespaces is required: 1 to %d namespaces", models.MaxNamespaces)
		return ids
	}
	a, ok := c.array("/storage/namespaces", v)
	if !ok {
		return ids
	}
	if len(a) < 1 || len(a) > models.MaxNamespaces {
		c.errorf("/storage/namespaces", CodeCount, "storage.namespaces has %d namespaces; 1 to %d are allowed", len(a), models.MaxNamespaces)
	}
	total := int64(0)
	for i, e := range a {
		p := c.ptr("/storage/namespaces", i)
		n := c.object(p, e, "id", "max_bytes", "ai_access")
		if n == nil {
			continue
		}
		if v, ok := n.get("id"); !ok {
			c.errorf(c.ptr(p, "id"), CodeRequired, "namespace id is required")
		} else if id, ok := c.str(c.ptr(p, "id"), v); ok {
			switch {
			case !models.IsSafeIdentifier(id):
				c.errorf(c.ptr(p, "id"), CodeFormat, "%q is not a safe identifier: a lower-case letter, then lower-case letters, digits or _, at most 64 characters", id)
			case ids[id]:
				c.errorf(c.ptr(p, "id"), CodeDuplicate, "namespace %q is declared more than once", id)
			}
			ids[id] = true
		}
		if v, ok := n.get("max_bytes"); !ok {
			c.errorf(c.ptr(p, "max_bytes"), CodeRequired, "max_bytes is required: 1 to %d bytes", models.MaxNamespaceBytes)
		} else if b, ok := c.integer(c.ptr(p, "max_bytes"), v, 1, models.MaxNamespaceBytes); ok {
			total += b
		}
		if v, ok := n.get("ai_access"); ok {
			if acc, ok := c.enum(c.ptr(p, "ai_access"), v, models.AIAccessNone, models.AIAccessRead, models.AIAccessReadWrite); ok &&
				acc != models.AIAccessNone && !perms[models.PermissionAIStorage] {
				c.errorf("/permissions", CodePermissionRequired, "namespace %d has ai_access %q, which requires the ai_storage permission", i, acc)
			}
		}
	}
	if total > models.MaxInstallationBytes {
		c.errorf("/storage/namespaces", CodeStorageTotal, "max_bytes of all namespaces add up to %d bytes; the Installation may hold at most %d (512 KiB)", total, models.MaxInstallationBytes)
	}
	return ids
}

// migrations checks storage.migrations.
func (c *checker) migrations(s *object, version int64, namespaces map[string]bool) {
	v, ok := s.get("migrations")
	if !ok {
		return
	}
	a, ok := c.array("/storage/migrations", v)
	if !ok {
		return
	}
	if len(a) > models.MaxMigrations {
		c.errorf("/storage/migrations", CodeCount, "storage.migrations has %d migrations; at most %d are allowed", len(a), models.MaxMigrations)
	}
	seen := map[string]int{}
	for i, e := range a {
		p := c.ptr("/storage/migrations", i)
		mg := c.object(p, e, "from", "to", "namespace", "rename", "delete")
		if mg == nil {
			continue
		}
		from, to := int64(0), int64(0)
		for _, f := range []string{"from", "to"} {
			fv, ok := mg.get(f)
			if !ok {
				c.errorf(c.ptr(p, f), CodeRequired, "%s is required: a storage version from %d to %d", f, models.MinStorageVersion, models.MaxStorageVersion)
				continue
			}
			if n, ok := c.integer(c.ptr(p, f), fv, models.MinStorageVersion, models.MaxStorageVersion); ok {
				if f == "from" {
					from = n
				} else {
					to = n
				}
			}
		}
		if from != 0 && to != 0 && to != from+1 {
			c.errorf(c.ptr(p, "to"), CodeMigrationStep, "migrates from %d to %d; a migration advances one step at a time (to must be %d)", from, to, from+1)
		}
		if to != 0 && version != 0 && to > version {
			c.errorf(c.ptr(p, "to"), CodeMigrationStep, "migrates to %d, beyond storage.version %d", to, version)
		}
		ns := ""
		if nv, ok := mg.get("namespace"); !ok {
			c.errorf(c.ptr(p, "namespace"), CodeRequired, "namespace is required: a namespace declared in storage.namespaces")
		} else if s, ok := c.str(c.ptr(p, "namespace"), nv); ok {
			ns = s
			if !namespaces[s] {
				c.errorf(c.ptr(p, "namespace"), CodeUnknownNamespace, "namespace %q is not declared in storage.namespaces", s)
			}
		}
		if from != 0 && ns != "" {
			pair := fmt.Sprintf("%d/%s", from, ns)
			if j, dup := seen[pair]; dup {
				c.errorf(p, CodeDuplicate, "a migration from %d for namespace %q is already declared at /storage/migrations/%d; each (from, namespace) pair may be declared once", from, ns, j)
			} else {
				seen[pair] = i
			}
		}
		renamed := c.migrationRename(p, mg)
		c.migrationDelete(p, mg, renamed)
		if _, hasR := mg.get("rename"); !hasR {
			if _, hasD := mg.get("delete"); !hasD {
				c.warnf(p, CodeMigrationEmpty, "this migration neither renames nor deletes a key")
			}
		}
	}
}

// migrationRename checks a rename map and returns its old keys.
func (c *checker) migrationRename(p string, mg *object) map[string]bool {
	olds := map[string]bool{}
	rv, ok := mg.get("rename")
	if !ok {
		return olds
	}
	r := c.object(c.ptr(p, "rename"), rv)
	if r == nil {
		return olds
	}
	targets := map[string]string{}
	for _, mb := range r.list() {
		old := mb.key
		kp := c.ptr(p, "rename", old)
		olds[old] = true
		if err := models.ValidateKey(old); err != nil {
			c.errorf(kp, CodeInvalidKey, "old key: %s", models.ErrorMessage(err))
		}
		nw, ok := c.str(kp, r.val(old))
		if !ok {
			continue
		}
		if err := models.ValidateKey(nw); err != nil {
			c.errorf(kp, CodeInvalidKey, "new key: %s", models.ErrorMessage(err))
			continue
		}
		if nw == old {
			c.errorf(kp, CodeInvalidKey, "renames %q to itself", old)
		}
		if prev, dup := targets[nw]; dup {
			c.errorf(kp, CodeDuplicate, "%q and %q are both renamed to %q", prev, old, nw)
		}
		targets[nw] = old
	}
	return olds
}

// migrationDelete checks a delete list.
func (c *checker) migrationDelete(p string, mg *object, renamed map[string]bool) {
	dv, ok := mg.get("delete")
	if !ok {
		return
	}
	d, ok := c.array(c.ptr(p, "delete"), dv)
	if !ok {
		return
	}
	seen := map[string]bool{}
	for j, e := range d {
		kp := c.ptr(p, "delete", j)
		k, ok := c.str(kp, e)
		if !ok {
			continue
		}
		if k == "" || len([]rune(k)) > models.MaxKeyLength {
			c.errorf(kp, CodeInvalidKey, "key names have 1 to %d characters", models.MaxKeyLength)
		}
		if seen[k] {
			c.errorf(kp, CodeDuplicate, "key %q is listed more than once", k)
		}
		if renamed[k] {
			c.errorf(kp, CodeDuplicate, "key %q is both renamed and deleted by this migration", k)
		}
		seen[k] = true
	}
}
