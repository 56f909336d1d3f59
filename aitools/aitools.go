package aitools

import (
	"context"
	"encoding/json"
	"strings"

	"pluginhost/access"
	"pluginhost/capability"
	"pluginhost/metrics"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// Service lists and runs the AI's tools: the standard storage tools, and the
// plugins' own runnable tool and skill capabilities.
type Service struct {
	Storage *storage.Service
	Handles *Handles
	// Gate lists the Instances a user's AI may use.
	Gate *access.Gate
	// Capabilities runs plugin capabilities; nil lists and runs none.
	Capabilities *capability.Service
}

// NamespaceAccess is a namespace a tool may use, with the AI's access to it.
type NamespaceAccess struct {
	ID     string
	Access string
}

// Tool is one storage tool of one Instance that the AI may call.
type Tool struct {
	Handle         string
	Capability     string
	InstanceID     string
	InstallationID string
	Namespaces     []NamespaceAccess
}

// Tools returns, for the user's enabled Instances of installed plugins:
// where the user granted ai_storage, one tool per standard storage tool that
// the namespaces' ai_access allows (list and get where a namespace is read or
// read_write, create, update and delete where one is read_write); and one
// tool per runnable tool or skill capability, whose namespaces are those its
// host actions could change with the consent (read_write ones).
func (s *Service) Tools(ctx context.Context, user *models.User) ([]Tool, error) {
	targets, err := s.Gate.List(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	tools := []Tool{}
	for _, t := range targets {
		m := t.Manifest
		r := struct {
			InstanceID, InstallationID string
			Generation                 int64
			AIConsent                  bool
		}{t.Instance.ID, t.Installation.ID, t.Installation.Generation, t.Installation.AIConsent}
		st := m.EffectiveStorage()
		if s.Capabilities != nil {
			// The namespaces the Instance's capabilities may change; its
			// tools share the list.
			nss := []NamespaceAccess{}
			if st != nil && r.AIConsent && m.HasPermission(models.PermissionAIStorage) {
				for _, n := range st.Namespaces {
					if n.Access() == models.AIAccessReadWrite {
						nss = append(nss, NamespaceAccess{ID: n.ID, Access: n.Access()})
					}
				}
			}
			for _, c := range m.Capabilities {
				if !c.Runnable() || (c.Kind != models.KindTool && c.Kind != models.KindSkill) {
					continue
				}
				tools = append(tools, Tool{Handle: s.Handles.Issue(r.InstanceID, c.ID, r.Generation), Capability: c.ID, InstanceID: r.InstanceID,
					InstallationID: r.InstallationID, Namespaces: nss})
			}
		}
		if st == nil || !r.AIConsent || !m.HasPermission(models.PermissionAIStorage) {
			continue
		}
		for _, tool := range models.StorageTools {
			var nss []NamespaceAccess
			for _, n := range st.Namespaces {
				a := n.Access()
				if a == models.AIAccessReadWrite || a == models.AIAccessRead && !models.IsMutatingTool(tool) {
					nss = append(nss, NamespaceAccess{ID: n.ID, Access: a})
				}
			}
			if len(nss) > 0 {
				tools = append(tools, Tool{Handle: s.Handles.Issue(r.InstanceID, tool, r.Generation), Capability: tool, InstanceID: r.InstanceID,
					InstallationID: r.InstallationID, Namespaces: nss})
			}
		}
	}
	return tools, nil
}

// Invoke runs the tool a handle names with the arguments. The scope comes
// from the handle alone: a scope field in the arguments is refused. On every
// call, whatever the grant, the storage service checks that the Instance is
// enabled and the user's, the consent is given, the Installation is at the
// handle's generation (else CONFLICT), the namespace is declared with an
// ai_access that allows the tool, and the key is not a credential name. Every
// change, and every refused call, is recorded in the audit trail.
func (s *Service) Invoke(ctx context.Context, user *models.User, handle string, args models.JSON) (out *models.ExtensionResult, callErr error) {
	instanceID, tool, generation, err := s.Handles.Open(handle)
	defer func() { metrics.AICall(tool, callErr) }()
	c := models.Caller{UserID: user.ID, AI: true, Generation: generation, Actor: models.ActorAI, Capability: tool}
	if err != nil {
		err = models.Errorf(models.ErrPermissionDenied, "the tool handle is not valid: %v", err)
		c.Capability = "unknown"
		s.Storage.RecordRefusal(c, "", "", "", err)
		return nil, err
	}
	if !strings.HasPrefix(tool, "host.storage.") {
		return s.runCapability(ctx, user, instanceID, tool, generation, args)
	}
	res, err := s.Storage.Invoke(ctx, c, instanceID, tool, args)
	if err != nil {
		ns, key := argScope(args)
		s.Storage.RecordRefusal(c, instanceID, ns, key, err)
	}
	return res, err
}

// runCapability runs a plugin's tool or skill for the AI. The scope is the
// handle's: a scope field in the arguments is refused. Its host actions are
// applied only with the ai_storage consent and read_write access on every
// namespace they touch; otherwise nothing is applied and the call is
// PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) runCapability(ctx context.Context, user *models.User, instanceID, id string, generation int64, args models.JSON) (*models.ExtensionResult, error) {
	if s.Capabilities == nil {
		return nil, models.Errorf(models.ErrPermissionDenied, "the tool handle is not valid: capabilities do not run on this host")
	}
	if field, ok := storage.ScopeArgument(args); ok {
		err := models.Errorf(models.ErrInvalid, "arguments must not name a scope (%s): the tool handle fixes the Instance", field)
		s.Storage.RecordRefusal(models.Caller{UserID: user.ID, Actor: models.ActorAI, Capability: id}, instanceID, "", "", err)
		return nil, err
	}
	return s.Capabilities.Run(ctx, capability.Call{Caller: models.Caller{UserID: user.ID, Generation: generation}, InstanceID: instanceID, Capability: id,
		Arguments: args, Trigger: sandbox.TriggerAI})
}

// argScope reads the namespace and key of arguments for the audit trail.
func argScope(args models.JSON) (string, string) {
	var a struct {
		Namespace any `json:"namespace"`
		Key       any `json:"key"`
	}
	json.Unmarshal(args, &a)
	ns, _ := a.Namespace.(string)
	key, _ := a.Key.(string)
	if len(ns) > 64 {
		ns = ns[:64]
	}
	return ns, key
}
