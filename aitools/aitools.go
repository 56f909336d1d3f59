package aitools

import (
	"context"
	"encoding/json"

	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/storage"
)

// Service lists and runs the AI's storage tools.
type Service struct {
	DB      *database.DB
	Storage *storage.Service
	Handles *Handles
}

// NamespaceAccess is a namespace a tool may use, with the AI's access to it.
type NamespaceAccess struct {
	ID     string
	Access string
}

// Tool is one storage tool of one Instance that the AI may call.
type Tool struct {
	Handle     string
	Capability string
	InstanceID string
	Namespaces []NamespaceAccess
}

// Tools returns, for the user's enabled Instances of installed plugins whose
// ai_storage the user granted, one tool per standard storage tool that the
// namespaces' ai_access allows: list and get where a namespace is read or
// read_write, create, update and delete where one is read_write.
func (s *Service) Tools(ctx context.Context, user *models.User) ([]Tool, error) {
	var rows []struct {
		InstanceID string
		Generation int64
		Manifest   string
	}
	err := s.DB.Read.WithContext(ctx).Table("instances").
		Select("instances.id AS instance_id, installations.generation, installations.manifest").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("instances.user_id = ? AND instances.enabled = ? AND installations.status = ? AND installations.ai_consent = ?",
			user.ID, true, models.InstallationInstalled, true).
		Order("instances.created_at, instances.id").Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	tools := []Tool{}
	for _, r := range rows {
		var m models.Manifest
		if err := json.Unmarshal([]byte(r.Manifest), &m); err != nil {
			return nil, err
		}
		st := m.EffectiveStorage()
		if st == nil || !m.HasPermission(models.PermissionAIStorage) {
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
				tools = append(tools, Tool{Handle: s.Handles.Issue(r.InstanceID, tool, r.Generation), Capability: tool, InstanceID: r.InstanceID, Namespaces: nss})
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
func (s *Service) Invoke(ctx context.Context, user *models.User, handle string, args models.JSON) (*models.ExtensionResult, error) {
	instanceID, tool, generation, err := s.Handles.Open(handle)
	c := storage.Caller{UserID: user.ID, AI: true, Generation: generation, Actor: storage.ActorAI, Capability: tool}
	if err != nil {
		err = models.Errorf(models.ErrPermissionDenied, "the tool handle is not valid: %v", err)
		c.Capability = "unknown"
		s.Storage.RecordRefusal(c, "", "", "", err)
		return nil, err
	}
	res, err := s.Storage.Invoke(ctx, c, instanceID, tool, args)
	if err != nil {
		ns, key := argScope(args)
		s.Storage.RecordRefusal(c, instanceID, ns, key, err)
	}
	return res, err
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
