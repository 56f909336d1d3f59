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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/metrics"
	"pluginhost/models"
	"pluginhost/netfetch"
	"pluginhost/notify"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// Service runs capabilities.
type Service struct {
	DB      *database.DB
	Storage *storage.Service
	Engine  *sandbox.Engine
	// Gate decides which Instances a caller may run capabilities of.
	Gate *access.Gate
	// Fetch makes the fetch rounds of runs; nil: runs cannot fetch.
	Fetch *netfetch.Service
	// Notify keeps the notifications runs send.
	Notify *notify.Service
	Log    *slog.Logger
}

// Call is one run to make.
type Call struct {
	// Caller is who asks: whose Instance it must be (the user, or for a
	// background run the Instance's owner) and, when not zero, the package
	// generation expected (invoke's generation, an AI handle's).
	Caller     models.Caller
	InstanceID string
	Capability string
	Arguments  models.JSON
	Query      *string
	// Trigger is sandbox.TriggerInvoke, TriggerSchedule or TriggerAI.
	Trigger string
}

// actor is who the audit trail names for a trigger.
func actor(trigger string) string {
	switch trigger {
	case sandbox.TriggerSchedule:
		return models.ActorBackground
	case sandbox.TriggerAI:
		return models.ActorAI
	}
	return models.ActorCapability
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
	who := models.Caller{UserID: call.Caller.UserID, Actor: actor(call.Trigger), Capability: call.Capability}
	var t *access.Target
	var c models.Capability
	defer func() {
		outcome := Outcome(err)
		installation := ""
		if t != nil {
			installation = t.Installation.ID
		}
		metrics.CapabilityRun(c.Kind, outcome, time.Since(begun))
		if call.Trigger == sandbox.TriggerSchedule {
			metrics.BackgroundRun(outcome)
		}
		if aerr := s.Storage.RecordRun(context.WithoutCancel(ctx), who, installation, call.InstanceID, outcome); aerr != nil && s.Log != nil {
			s.Log.Error("capability: audit record lost", "err", aerr, "instance", call.InstanceID, "capability", call.Capability)
		}
	}()

	// 1. The Instance, through the gate, once: the caller's, enabled, of an
	// installed plugin, at the expected generation; the capability it
	// declares.
	t, err = s.Gate.Open(ctx, models.Caller{UserID: call.Caller.UserID, Generation: call.Caller.Generation}, call.InstanceID, access.Use)
	if err != nil {
		return nil, err
	}
	c, ok := t.Manifest.Capability(call.Capability)
	if !ok {
		return nil, models.Errorf(models.ErrInvalid, "capability %q is not declared by plugin %s", call.Capability, t.Installation.PluginID)
	}
	if call.Trigger == sandbox.TriggerAI && c.Kind != models.KindTool && c.Kind != models.KindSkill {
		return nil, models.Errorf(models.ErrPermissionDenied, "capability %s is of kind %s; the AI runs tool and skill capabilities", call.Capability, c.Kind)
	}
	generation := t.Installation.Generation

	// 2. Its module, compiled (once per module, not per run).
	var mod *sandbox.Module
	if c.Runnable() {
		if mod, err = s.module(ctx, t, c); err != nil {
			return nil, err
		}
		defer s.Engine.Release(mod)
	}

	// 3. The request, with the storage snapshot when the plugin has storage,
	// read for the Instance the gate admitted.
	req := sandbox.Request{
		Capability: c.ID, Kind: c.Kind, Trigger: call.Trigger,
		Arguments: json.RawMessage(call.Arguments), Query: call.Query,
		Instance: sandbox.Instance{ID: call.InstanceID, InstallationID: t.Installation.ID, Generation: generation},
	}
	if mod != nil && t.Manifest.EffectiveStorage() != nil {
		snap, err := s.Storage.ContentsOf(ctx, models.Caller{UserID: call.Caller.UserID}, t)
		if err != nil {
			return nil, err
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
	job := sandbox.Job{Capability: c, Module: mod, Request: req, User: call.Caller.UserID}
	var refused string // a connection whose provider refused its credential during the run
	if s.Fetch != nil {
		job.Fetch = s.Fetch.Fetcher(netfetch.Run{Target: t, Capability: c.ID, UserID: call.Caller.UserID,
			Refused: func(connection string) { refused = connection }})
	}
	out, rep, err := s.Engine.Run(ctx, job)
	if rep.Duration > 0 { // none when the arguments or the module were refused first
		metrics.ModuleTime(c.Kind, rep.Duration)
	}
	if err != nil {
		if s.Log != nil && len(rep.Stderr) > 0 {
			s.Log.Debug("capability run failed", "instance", call.InstanceID, "capability", call.Capability, "stderr_bytes", len(rep.Stderr))
		}
		return nil, withRefusal(err, refused)
	}

	// Its notifications are checked before anything is applied: a broken
	// rule fails the run.
	notices, err := notify.Parse(t.Manifest, c, out.Notifications)
	if err != nil {
		return nil, err
	}

	// 5. Its host actions, all in one transaction at the run's generation,
	// or none. The write locks the Instance's row, as every write does, and
	// applies the gate's rule to it again.
	res = &out.ExtensionResult
	if out.HostActions != nil {
		apply := models.Caller{UserID: call.Caller.UserID, Generation: generation, Actor: who.Actor, Capability: call.Capability,
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

	// 6. Its notifications, kept and pushed to the user (none when the
	// Instance is muted).
	if len(notices) > 0 && s.Notify != nil {
		if err := s.Notify.Record(context.WithoutCancel(ctx), t, c.ID, notices); err != nil && s.Log != nil {
			s.Log.Error("capability: notifications lost", "err", err, "instance", call.InstanceID, "capability", call.Capability)
		}
	}
	return res, nil
}

// withRefusal names, in a failed run's error, the connection whose provider
// refused its credential during the run, as the likely cause that the user
// can fix.
func withRefusal(err error, connection string) error {
	var e *models.Error
	if connection == "" || !errors.As(err, &e) || e.Code != models.ErrCapabilityFailed || e.Connection != "" {
		return err
	}
	named := *e
	named.Connection = connection
	return &named
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

// module returns the compiled module of a capability of the target: by the
// SHA-256 the manifest records for it (a package installed before it did
// has it read from the stored modules), its bytes read only when it is
// neither compiled nor being compiled.
func (s *Service) module(ctx context.Context, t *access.Target, c models.Capability) (*sandbox.Module, error) {
	sum := c.ModuleSHA256
	if sum == "" {
		err := s.DB.Read.WithContext(ctx).Model(&database.ModuleRow{}).Select("sha256").
			Where("installation_id = ? AND generation = ? AND path = ?", t.Installation.ID, t.Installation.Generation, c.Module).Limit(1).Scan(&sum).Error
		if err != nil {
			return nil, err
		}
	}
	if sum == "" {
		return nil, models.CapabilityFailed(models.ReasonNoModule, "the package of generation %d holds no module %s for capability %s", t.Installation.Generation, c.Module, c.ID)
	}
	compiled := s.Engine.CompileStored
	if models.IsDevelopmentVersion(t.Installation.Version) {
		// The author waits for this run more than for a fast one: until
		// the module is compiled, it runs in the interpreter.
		compiled = s.Engine.Quick
	}
	mod, err := compiled(ctx, sum, s.content(t.Installation.ID, t.Installation.Generation, c.Module))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The compilation goes on without this run; a later one finds it done.
			return nil, models.CapabilityFailed(models.ReasonBusy, "module %s of capability %s was still being compiled when the run's time was up "+
				"(a module's first run on a replica that has not compiled it waits for it); try again shortly", c.Module, c.ID)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, models.CapabilityFailed(models.ReasonNoModule, "module %s of capability %s cannot run: %v", c.Module, c.ID, err)
	}
	return mod, nil
}

// content returns the loader of a stored module's content, for
// sandbox.Engine.CompileStored.
func (s *Service) content(installationID string, generation int64, path string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		var content []byte
		err := s.DB.Read.WithContext(ctx).Model(&database.ModuleRow{}).Select("content").
			Where("installation_id = ? AND generation = ? AND path = ?", installationID, generation, path).Limit(1).Row().Scan(&content)
		return content, err
	}
}

// CompileModule compiles a module for an install (lifecycle.ModuleCompiler),
// within ctx; the compilation goes on when ctx ends first.
func (s *Service) CompileModule(ctx context.Context, wasm []byte) error {
	mod, err := s.Engine.Compile(ctx, wasm)
	if err != nil {
		return err
	}
	s.Engine.Release(mod)
	return nil
}

// QuickModule makes a module ready to run at once (lifecycle.ModuleCompiler):
// in the interpreter, its compilation to follow (sandbox.Engine.Quick).
func (s *Service) QuickModule(ctx context.Context, wasm []byte) error {
	sum := sha256.Sum256(wasm)
	mod, err := s.Engine.Quick(ctx, hex.EncodeToString(sum[:]), func(context.Context) ([]byte, error) { return wasm, nil })
	if err != nil {
		return err
	}
	s.Engine.Release(mod)
	return nil
}

// ForgetModule says that a module QuickModule made ready is no longer
// needed (lifecycle.ModuleCompiler): its compilation, if not begun, does
// not begin.
func (s *Service) ForgetModule(sum string) { s.Engine.Forget(sum) }

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

// Prepare compiles, in the background, the modules of a package that are
// neither compiled nor being compiled, so that the first run finds them
// compiled (a run that comes sooner waits for the same compilation rather
// than starting its own).
func (s *Service) Prepare(t *access.Target) {
	for _, c := range t.Manifest.Capabilities {
		if !c.Runnable() || c.ModuleSHA256 != "" && s.Engine.Known(c.ModuleSHA256) {
			continue
		}
		go func() {
			mod, err := s.module(context.Background(), t, c)
			if err == nil {
				s.Engine.Release(mod)
			} else if s.Log != nil {
				s.Log.Warn("capability: compiling a package's module failed", "installation", t.Installation.ID, "generation", t.Installation.Generation,
					"module", c.Module, "err", err)
			}
		}()
	}
}
