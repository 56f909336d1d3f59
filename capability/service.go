// Package capability runs a plugin's own capabilities for the host: for
// invoke (data sources and invoke actions), for the AI (aiInvoke) and for the
// background schedule. Run holds the host's part of a run in order: the
// Instance and its package, the capability and its module, the storage
// snapshot, the sandboxed run (package sandbox), the host actions applied in
// one transaction at the run's generation, then the audit record and the
// metrics. It is the one path every trigger takes.
package capability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"pluginhost/database"
	"pluginhost/lifecycle"
	"pluginhost/metrics"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// Service runs capabilities.
type Service struct {
	DB      *database.DB
	Storage *storage.Service
	Engine  *sandbox.Engine
	Log     *slog.Logger

	manifests  sync.Map // manifestKey -> *models.Manifest
	moduleSums sync.Map // manifestKey -> map[string]string: module path -> sha256
	prepared   sync.Map // manifestKey -> struct{}: Prepare was called
}

type manifestKey struct {
	installation string
	generation   int64
}

// Call is one run to make.
type Call struct {
	// UserID is whose Instance it must be: the caller, or for a background
	// run the Instance's owner.
	UserID     string
	InstanceID string
	Capability string
	Arguments  models.JSON
	Query      *string
	// Generation, when non-zero, is the package generation the caller
	// expects (invoke's generation, an AI handle's); another current
	// generation is PLUGIN_STORAGE_CONFLICT.
	Generation int64
	// Trigger is sandbox.TriggerInvoke, TriggerSchedule or TriggerAI.
	Trigger string
}

// actor is who the audit trail names for a trigger.
func actor(trigger string) string {
	switch trigger {
	case sandbox.TriggerSchedule:
		return storage.ActorBackground
	case sandbox.TriggerAI:
		return storage.ActorAI
	}
	return storage.ActorCapability
}

// target is the Instance a run is for, with its package.
type target struct {
	installationID string
	generation     int64
	manifest       *models.Manifest
	capability     models.Capability
}

// Run makes one run of a plugin capability for an Instance and returns its
// result. Errors: PLUGIN_STORAGE_PERMISSION_DENIED for an Instance that is
// unknown, another user's, disabled or of an uninstalled plugin (and, for
// the AI, host actions without consent and read_write access);
// PLUGIN_STORAGE_CONFLICT for a stale generation; PLUGIN_STORAGE_INVALID for
// an undeclared capability; BAD_USER_INPUT for arguments that break
// input_schema; CAPABILITY_FAILED with its reason for a failed run; the
// storage codes of host actions that cannot be applied. Whatever the error,
// nothing the run returned is applied.
func (s *Service) Run(ctx context.Context, call Call) (res *models.ExtensionResult, err error) {
	begun := time.Now()
	who := storage.Caller{UserID: call.UserID, Actor: actor(call.Trigger), Capability: call.Capability}
	var t *target
	defer func() {
		outcome := Outcome(err)
		installation, kind := "", ""
		if t != nil {
			installation, kind = t.installationID, t.capability.Kind
		}
		metrics.CapabilityRun(kind, outcome, time.Since(begun))
		if call.Trigger == sandbox.TriggerSchedule {
			metrics.BackgroundRun(outcome)
		}
		if aerr := s.Storage.RecordRun(context.WithoutCancel(ctx), who, installation, call.InstanceID, outcome); aerr != nil && s.Log != nil {
			s.Log.Error("capability: audit record lost", "err", aerr, "instance", call.InstanceID, "capability", call.Capability)
		}
	}()

	// 1. The Instance: the caller's, enabled, of an installed plugin, at the
	// expected generation; the capability it declares.
	t, err = s.load(ctx, call)
	if err != nil {
		return nil, err
	}
	if call.Trigger == sandbox.TriggerAI && t.capability.Kind != models.KindTool && t.capability.Kind != models.KindSkill {
		return nil, models.Errorf(models.ErrPermissionDenied, "capability %s is of kind %s; the AI runs tool and skill capabilities", call.Capability, t.capability.Kind)
	}

	// 2. Its module, compiled (once per module, not per run).
	var mod *sandbox.Module
	if t.capability.Runnable() {
		if mod, err = s.module(ctx, t); err != nil {
			return nil, err
		}
		defer s.Engine.Release(mod)
	}

	// 3. The request, with the storage snapshot when the plugin has storage.
	req := sandbox.Request{
		Capability: t.capability.ID, Kind: t.capability.Kind, Trigger: call.Trigger,
		Arguments: json.RawMessage(call.Arguments), Query: call.Query,
		Instance: sandbox.Instance{ID: call.InstanceID, InstallationID: t.installationID, Generation: t.generation},
	}
	if mod != nil && t.manifest.EffectiveStorage() != nil {
		snap, err := s.Storage.Snapshot(ctx, storage.Caller{UserID: call.UserID}, call.InstanceID)
		if err != nil {
			return nil, err
		}
		if snap.Generation != t.generation {
			return nil, models.Errorf(models.ErrConflict, "the plugin was updated while the run was prepared (generation %d, now %d)", t.generation, snap.Generation)
		}
		req.PluginStorage = &sandbox.PluginStorage{StorageRevision: snap.StorageRevision, Namespaces: map[string][]sandbox.Item{}}
		for _, n := range snap.Namespaces {
			items := make([]sandbox.Item, len(n.Items))
			for i, it := range n.Items {
				items[i] = sandbox.Item{Key: it.Key, Value: json.RawMessage(it.Value), Revision: it.Revision}
			}
			req.PluginStorage.Namespaces[n.ID] = items
		}
	}

	// 4. The run, in the sandbox: input checked, module run within the
	// limits, output read and checked.
	out, rep, err := s.Engine.Run(ctx, sandbox.Job{Capability: t.capability, Module: mod, Request: req, User: call.UserID})
	if err != nil {
		if s.Log != nil && len(rep.Stderr) > 0 {
			s.Log.Debug("capability run failed", "instance", call.InstanceID, "capability", call.Capability, "stderr_bytes", len(rep.Stderr))
		}
		return nil, err
	}

	// 5. Its host actions, all in one transaction at the run's generation,
	// or none.
	res = &out.ExtensionResult
	if out.HostActions != nil {
		apply := storage.Caller{UserID: call.UserID, Generation: t.generation, Actor: who.Actor, Capability: call.Capability,
			AI: call.Trigger == sandbox.TriggerAI}
		// Values are stored as json.Marshal writes them, with <, > and &
		// escaped, like those that come through GraphQL.
		var actions bytes.Buffer
		json.HTMLEscape(&actions, out.HostActions)
		applied, err := s.Storage.ApplyHostActions(ctx, apply, call.InstanceID, call.Capability, actions.Bytes())
		if err != nil {
			return nil, err
		}
		res.Evidence = append(res.Evidence, applied.Evidence...)
	}
	return res, nil
}

// Outcome names how a run ended, for the audit trail and the metrics: ok,
// the reason of CAPABILITY_FAILED, or the error's code.
func Outcome(err error) string {
	var e *models.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &e) && e.Reason != "":
		return e.Reason
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return string(models.ErrorCode(err))
}

// load reads the Instance and its package for the caller and applies the
// rules of every run.
func (s *Service) load(ctx context.Context, call Call) (*target, error) {
	var row struct {
		UserID         string
		Enabled        bool
		InstallationID string
		PluginID       string
		Status         string
		Generation     int64
	}
	err := s.DB.Read.WithContext(ctx).Table("instances").
		Select("instances.user_id, instances.enabled, installations.id AS installation_id, installations.plugin_id, installations.status, installations.generation").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("instances.id = ?", call.InstanceID).Limit(1).Scan(&row).Error
	if err != nil {
		return nil, err
	}
	switch {
	case row.UserID == "" || row.UserID != call.UserID:
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q does not exist or does not belong to you", call.InstanceID)
	case row.Status != models.InstallationInstalled:
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q belongs to a plugin that is uninstalled", call.InstanceID)
	case !row.Enabled:
		return nil, models.Errorf(models.ErrPermissionDenied, "instance %q is disabled: none of its capabilities runs until it is enabled", call.InstanceID)
	case call.Generation != 0 && call.Generation != row.Generation:
		return nil, models.Errorf(models.ErrConflict, "the plugin's package is at generation %d, not %d: reload and try again", row.Generation, call.Generation)
	}
	m, err := s.Manifest(ctx, row.InstallationID, row.Generation)
	if err != nil {
		return nil, err
	}
	c, ok := m.Capability(call.Capability)
	if !ok {
		return nil, models.Errorf(models.ErrInvalid, "capability %q is not declared by plugin %s", call.Capability, row.PluginID)
	}
	return &target{installationID: row.InstallationID, generation: row.Generation, manifest: m, capability: c}, nil
}

// Manifest returns an Installation's manifest at a generation; a package
// never changes within a generation, so it is read once.
func (s *Service) Manifest(ctx context.Context, installationID string, generation int64) (*models.Manifest, error) {
	k := manifestKey{installationID, generation}
	if m, ok := s.manifests.Load(k); ok {
		return m.(*models.Manifest), nil
	}
	var raw string
	err := s.DB.Read.WithContext(ctx).Table("installations").Select("manifest").
		Where("id = ? AND generation = ?", installationID, generation).Limit(1).Scan(&raw).Error
	if err != nil {
		return nil, err
	}
	if raw == "" {
		return nil, models.Errorf(models.ErrConflict, "the plugin was updated while the run was prepared")
	}
	var m models.Manifest
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("installation %s: stored manifest: %w", installationID, err)
	}
	s.manifests.Store(k, &m)
	return &m, nil
}

// sums returns the SHA-256 of every module of an Installation's package at
// a generation, by path; modules never change within a generation, so they
// are read once.
func (s *Service) sums(ctx context.Context, installationID string, generation int64) (map[string]string, error) {
	k := manifestKey{installationID, generation}
	if m, ok := s.moduleSums.Load(k); ok {
		return m.(map[string]string), nil
	}
	var rows []lifecycle.ModuleRow
	err := s.DB.Read.WithContext(ctx).Select("path, sha256").
		Where("installation_id = ? AND generation = ?", installationID, generation).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	sums := make(map[string]string, len(rows))
	for _, row := range rows {
		sums[row.Path] = row.SHA256
	}
	if len(sums) > 0 { // a package with none is read again, as a missing manifest is
		s.moduleSums.Store(k, sums)
	}
	return sums, nil
}

// content returns the loader of a stored module's content, for
// sandbox.Engine.CompileStored.
func (s *Service) content(installationID string, generation int64, path string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		var content []byte
		err := s.DB.Read.WithContext(ctx).Model(&lifecycle.ModuleRow{}).Select("content").
			Where("installation_id = ? AND generation = ? AND path = ?", installationID, generation, path).Limit(1).Row().Scan(&content)
		return content, err
	}
}

// module returns the compiled module of the target's capability.
func (s *Service) module(ctx context.Context, t *target) (*sandbox.Module, error) {
	sums, err := s.sums(ctx, t.installationID, t.generation)
	if err != nil {
		return nil, err
	}
	sum := sums[t.capability.Module]
	if sum == "" {
		return nil, models.CapabilityFailed(models.ReasonNoModule, "the package of generation %d holds no module %s for capability %s", t.generation, t.capability.Module, t.capability.ID)
	}
	mod, err := s.Engine.CompileStored(ctx, sum, s.content(t.installationID, t.generation, t.capability.Module))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The compilation goes on without this run; a later one finds it done.
			return nil, models.CapabilityFailed(models.ReasonBusy, "module %s of capability %s was still being compiled when the run's time was up "+
				"(a module's first run after an install or a restart waits for it); try again shortly", t.capability.Module, t.capability.ID)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, models.CapabilityFailed(models.ReasonNoModule, "module %s of capability %s cannot run: %v", t.capability.Module, t.capability.ID, err)
	}
	return mod, nil
}

// InstallCompileWait is how long an install waits for its modules to
// compile; past it the install goes on and so does the compilation.
const InstallCompileWait = 20 * time.Second

// CompileModule compiles a module for an install (lifecycle.ModuleCompiler):
// a module the engine refuses is an error; one still compiling after
// InstallCompileWait is not, and its compilation goes on.
func (s *Service) CompileModule(ctx context.Context, wasm []byte) error {
	wait, cancel := context.WithTimeout(ctx, InstallCompileWait)
	defer cancel()
	mod, err := s.Engine.Compile(wait, wasm)
	if err == nil {
		s.Engine.Release(mod)
		return nil
	}
	if wait.Err() != nil && ctx.Err() == nil {
		return nil
	}
	return err
}

// Scheduled lists the background capabilities of a manifest that run on a
// schedule.
func Scheduled(m *models.Manifest) []models.Capability {
	var out []models.Capability
	for _, c := range m.Capabilities {
		if c.Kind == models.KindBackground && c.Runnable() && c.ScheduleSeconds > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Prepare compiles, in the background, the modules of an Installation's
// package at a generation, once, so that the first run finds them compiled
// (a run that comes sooner waits for the same compilation rather than
// starting its own).
func (s *Service) Prepare(installationID string, generation int64) {
	if _, done := s.prepared.LoadOrStore(manifestKey{installationID, generation}, struct{}{}); done {
		return
	}
	go func() {
		ctx := context.Background()
		sums, err := s.sums(ctx, installationID, generation)
		for _, path := range slices.Sorted(maps.Keys(sums)) {
			if err != nil {
				break
			}
			var mod *sandbox.Module
			mod, err = s.Engine.CompileStored(ctx, sums[path], s.content(installationID, generation, path))
			if err == nil {
				s.Engine.Release(mod)
			}
		}
		if err != nil && s.Log != nil {
			s.Log.Warn("capability: compiling a package's modules failed", "installation", installationID, "generation", generation, "err", err)
		}
	}()
}
