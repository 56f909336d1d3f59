package resolvers

import (
	"context"
	"strconv"

	"pluginhost/auth"
	"pluginhost/graph"
	"pluginhost/models"
	"pluginhost/notify"
	"pluginhost/schedule"
	"pluginhost/storage"
)

// node reads the object a global id names as the object's own query does,
// with that query's errors: another user's object is refused as an unknown
// one is, never answered.
func (r *Resolver) node(ctx context.Context, user *models.User, id string) (models.Node, error) {
	typ, scope, err := models.ParseNodeID(id)
	if err != nil {
		return nil, err
	}
	c := models.Caller{UserID: user.ID}
	switch typ {
	case models.NodeUser:
		if scope[0] == user.ID {
			return user, nil
		}
		if _, err := auth.RequireAdmin(ctx); err != nil {
			return nil, models.Errorf(models.ErrForbidden, "a user reads only their own user; admins read the others")
		}
		return found(r.Auth.User(ctx, scope[0]))
	case models.NodeInstallation:
		return found(r.Lifecycle.Installation(ctx, user, scope[0]))
	case models.NodeInstance:
		return found(r.Lifecycle.Instance(ctx, user, scope[0]))
	case models.NodeAccessToken:
		if _, err := auth.RequireAdmin(ctx); err != nil {
			return nil, err
		}
		t, err := r.Auth.Token(ctx, scope[0])
		if err != nil {
			return nil, err
		}
		return accessToken(t), nil
	case models.NodeNotification:
		return found(r.Notify.Get(ctx, user.ID, scope[0]))
	case models.NodeNotificationAction:
		n, err := r.Notify.Get(ctx, user.ID, scope[0])
		if err != nil {
			return nil, err
		}
		for _, a := range notificationActions(n) {
			if a.ActionID() == scope[1] {
				return a, nil
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "notification %q has no action %q", n.ID, scope[1])
	case models.NodeExtension:
		instl, err := r.Lifecycle.Installation(ctx, user, scope[0])
		if err != nil {
			return nil, err
		}
		exts, err := r.UI.Extensions(ctx, instl.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range exts {
			if e.ID == scope[1] {
				return &graph.Extension{ExtensionConfig: e, InstallationID: instl.ID}, nil
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "the installed package of %s has no extension %q", instl.PluginID, scope[1])
	case models.NodeCapability:
		instl, err := r.Lifecycle.Installation(ctx, user, scope[0])
		if err != nil {
			return nil, err
		}
		for _, cap := range capabilities(instl) {
			if cap.ManifestID() == scope[1] {
				return cap, nil
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "the installed package of %s has no capability %q", instl.PluginID, scope[1])
	case models.NodeNamespace, models.NodeAiNamespace:
		instl, err := r.Lifecycle.Installation(ctx, user, scope[0])
		if err != nil {
			return nil, err
		}
		if st := instl.Manifest.EffectiveStorage(); st != nil {
			for _, n := range st.Namespaces {
				switch {
				case n.ID != scope[1]:
				case typ == models.NodeNamespace:
					return namespace(instl.ID, n), nil
				case n.Access() != models.AIAccessNone:
					return aiNamespace(instl.ID, n.ID, n.Access()), nil
				default:
					return nil, models.Errorf(models.ErrBadUserInput, "the AI has no access to namespace %q of %s", n.ID, instl.PluginID)
				}
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "the installed package of %s declares no namespace %q", instl.PluginID, scope[1])
	case models.NodeConnection:
		list, err := r.Connections.Of(ctx, c, scope[0])
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if s.ID == scope[1] {
				return &graph.Connection{Status: s, InstanceID: scope[0]}, nil
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "the plugin of Instance %q declares no connection %q", scope[0], scope[1])
	case models.NodeUiConfig:
		return found(r.UI.UIConfig(ctx, c, scope[0], scope[1]))
	case models.NodeAuditEntry:
		n, err := recordNumber(id, scope[0])
		if err != nil {
			return nil, err
		}
		e, err := r.Storage.AuditRecord(ctx, user.ID, n)
		if err != nil {
			return nil, err
		}
		return auditEntry(*e), nil
	case models.NodeFetchRecord:
		n, err := recordNumber(id, scope[0])
		if err != nil {
			return nil, err
		}
		return found(r.Storage.Fetch(ctx, user.ID, n))
	case models.NodeSavedEntity:
		return found(savedEntity(scope[0])(r.Storage.Get(ctx, c, scope[0], models.SavedEntitiesNamespace, scope[1])))
	case models.NodeBackgroundRun:
		inst, err := r.Lifecycle.Instance(ctx, user, scope[0])
		if err != nil {
			return nil, err
		}
		runs, err := r.Schedule.Runs(ctx, inst)
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			if run.Capability == scope[1] {
				return backgroundRun(inst.ID, run), nil
			}
		}
		return nil, models.Errorf(models.ErrBadUserInput, "Instance %q has no scheduled background capability %q", inst.ID, scope[1])
	case models.NodeRenderedResponse:
		if scope[0] != user.ID {
			return nil, models.Errorf(models.ErrPermissionDenied, "no response of message %q is yours to show", scope[1])
		}
		return found(r.UI.RenderedOne(ctx, user, scope[1]))
	}
	return nil, models.Errorf(models.ErrBadUserInput, "id %q names no object node reads", id)
}

// found returns what a lookup found as a node, or its error.
func found[T any](v *T, err error) (models.Node, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// recordNumber reads the record number a global id holds.
func recordNumber(id, s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, models.Errorf(models.ErrBadUserInput, "id %q is not an id this server gave", id)
	}
	return n, nil
}

// capabilities returns the capabilities of an Installation's package.
func capabilities(instl *models.Installation) []*graph.Capability {
	out := make([]*graph.Capability, len(instl.Manifest.Capabilities))
	for i, c := range instl.Manifest.Capabilities {
		out[i] = &graph.Capability{Capability: c, InstallationID: instl.ID}
	}
	return out
}

func namespace(installationID string, n models.NamespaceDecl) *graph.Namespace {
	return &graph.Namespace{ID: models.NodeID(models.NodeNamespace, installationID, n.ID), ManifestID: n.ID,
		MaxBytes: n.MaxBytes, AiAccess: n.Access()}
}

func aiNamespace(installationID, namespace, access string) *graph.AiNamespace {
	return &graph.AiNamespace{ID: models.NodeID(models.NodeAiNamespace, installationID, namespace), ManifestID: namespace, Access: access}
}

// notificationActions returns the actions of a notification.
func notificationActions(n *notify.Notification) []*graph.NotificationAction {
	out := make([]*graph.NotificationAction, len(n.Actions))
	for i, a := range n.Actions {
		out[i] = &graph.NotificationAction{Action: a, NotificationID: n.ID}
	}
	return out
}

func auditEntry(e storage.AuditEntry) *graph.AuditEntry {
	return &graph.AuditEntry{
		ID: models.NodeID(models.NodeAuditEntry, strconv.FormatInt(e.ID, 10)), InstanceID: e.InstanceID, InstallationID: e.InstallationID,
		Actor: e.Actor, Capability: e.Capability, Namespace: e.Namespace, Key: e.Key, Operation: e.Operation, Outcome: e.Outcome,
		RevisionBefore: int(e.RevisionBefore), RevisionAfter: int(e.RevisionAfter), ValueBytes: int(e.ValueBytes),
		At: models.FormatTime(e.At),
	}
}

func backgroundRun(instanceID string, run schedule.Run) *graph.BackgroundRun {
	b := &graph.BackgroundRun{ID: models.NodeID(models.NodeBackgroundRun, instanceID, run.Capability), Capability: run.Capability,
		ScheduleSeconds: run.ScheduleSeconds, NextRunAt: models.FormatTime(run.NextRunAt), Failures: run.Failures}
	if run.QuarantinedAt != nil {
		at := models.FormatTime(*run.QuarantinedAt)
		b.QuarantinedAt = &at
	}
	if run.LastRunAt != nil {
		at, outcome := models.FormatTime(*run.LastRunAt), run.LastOutcome
		b.LastRunAt, b.LastOutcome = &at, &outcome
	}
	return b
}
