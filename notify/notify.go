// Package notify keeps the notifications plugins send their users: a run of
// a tool, skill or background capability returns them in
// data.notifications; they are checked, kept (200 a user at most, the same
// id of the same Instance replacing the earlier one), pushed to the user's
// sockets on every replica, and their actions run on the user's word: host
// actions applied at the current generation, an extension opened, a
// capability invoked.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"pluginhost/access"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/storage"
)

// Limits of the contract.
const (
	MaxPerRun      = 4
	MaxTitleChars  = 120
	MaxBodyChars   = 1000
	MaxActions     = 3
	MaxIDChars     = 64
	MaxLabelChars  = 40
	MaxHostActions = storage.MaxHostActions
	// Keep is how many notifications a user keeps; older ones are dropped.
	Keep = 200
	// MaxPage bounds a page of notifications, and the ids one MarkRead
	// marks.
	MaxPage = models.MaxPageSize
)

// Severities.
var severities = []string{"info", "success", "warning", "error"}

// Action types.
const (
	ActionHostActions = "host_actions"
	ActionOpen        = "open"
	ActionInvoke      = "invoke"
)

// pendingKind is the kind of a pending action that is a notification's
// host actions.
const pendingKind = "notification"

// Notification is a notification as its user sees it.
type Notification struct {
	ID         string
	InstanceID string
	PluginID   string
	Capability string
	NoticeID   string
	Title      string
	Body       string
	Severity   string
	Actions    []Action
	Read       bool
	CreatedAt  time.Time
	Generation int64
}

// Action is a button of a notification (a host_actions action's host
// actions stay with the host until it is taken).
type Action struct {
	ID         string      `json:"id"`
	Label      string      `json:"label"`
	Type       string      `json:"type"`
	Extension  string      `json:"extension,omitempty"`
	Parameters models.JSON `json:"parameters,omitempty"`
	Capability string      `json:"capability,omitempty"`
	Arguments  models.JSON `json:"arguments,omitempty"`
}

// Incoming is a notification a run returned, checked.
type Incoming struct {
	NoticeID, Title, Body, Severity string
	Actions                         []Action
	hostActions                     map[string]json.RawMessage // by action id
}

func badOutput(format string, args ...any) error {
	return models.CapabilityFailed(models.ReasonBadOutput, format, args...)
}

// Parse checks data.notifications of a run of capability c of the
// manifest: the permission, the kind, and every rule of a notification. A
// broken rule fails the run (bad_output) with the rule and where.
func Parse(m *models.Manifest, c models.Capability, raw json.RawMessage) ([]Incoming, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	if !m.HasPermission(models.PermissionNotifications) {
		return nil, badOutput("data.notifications: plugin %s does not request the notifications permission", m.ID)
	}
	if c.Kind != models.KindTool && c.Kind != models.KindSkill && c.Kind != models.KindBackground {
		return nil, badOutput("data.notifications: a %s capability does not notify; tool, skill and background capabilities do", c.Kind)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badOutput("data.notifications must be an array of notifications")
	}
	if len(list) > MaxPerRun {
		return nil, badOutput("data.notifications holds %d notifications; a run sends at most %d", len(list), MaxPerRun)
	}
	out := make([]Incoming, 0, len(list))
	seen := map[string]bool{}
	for i, item := range list {
		at := fmt.Sprintf("data.notifications[%d]", i)
		var n struct {
			ID       *string           `json:"id"`
			Title    *string           `json:"title"`
			Body     string            `json:"body"`
			Severity *string           `json:"severity"`
			Actions  []json.RawMessage `json:"actions"`
		}
		if err := strictUnmarshal(item, &n); err != nil {
			return nil, badOutput("%s: %v; a notification is {id, title, body, severity, actions}", at, err)
		}
		switch {
		case n.ID == nil || *n.ID == "" || utf8.RuneCountInString(*n.ID) > MaxIDChars:
			return nil, badOutput("%s.id must be 1 to %d characters", at, MaxIDChars)
		case seen[*n.ID]:
			return nil, badOutput("%s.id %q is used twice in the run", at, *n.ID)
		case n.Title == nil || strings.TrimSpace(*n.Title) == "":
			return nil, badOutput("%s.title is required", at)
		case utf8.RuneCountInString(*n.Title) > MaxTitleChars:
			return nil, badOutput("%s.title has %d characters; at most %d", at, utf8.RuneCountInString(*n.Title), MaxTitleChars)
		case utf8.RuneCountInString(n.Body) > MaxBodyChars:
			return nil, badOutput("%s.body has %d characters; at most %d", at, utf8.RuneCountInString(n.Body), MaxBodyChars)
		case n.Severity == nil || !contains(severities, *n.Severity):
			return nil, badOutput("%s.severity must be one of %s", at, strings.Join(severities, ", "))
		case len(n.Actions) > MaxActions:
			return nil, badOutput("%s.actions holds %d actions; at most %d", at, len(n.Actions), MaxActions)
		}
		seen[*n.ID] = true
		in := Incoming{NoticeID: *n.ID, Title: *n.Title, Body: n.Body, Severity: *n.Severity, Actions: []Action{}, hostActions: map[string]json.RawMessage{}}
		ids := map[string]bool{}
		for j, rawAction := range n.Actions {
			a, hostActions, err := parseAction(m, fmt.Sprintf("%s.actions[%d]", at, j), rawAction)
			if err != nil {
				return nil, err
			}
			if ids[a.ID] {
				return nil, badOutput("%s.actions[%d].id %q is used twice", at, j, a.ID)
			}
			ids[a.ID] = true
			in.Actions = append(in.Actions, a)
			if hostActions != nil {
				in.hostActions[a.ID] = hostActions
			}
		}
		out = append(out, in)
	}
	return out, nil
}

func parseAction(m *models.Manifest, at string, raw json.RawMessage) (Action, json.RawMessage, error) {
	var b struct {
		ID     *string         `json:"id"`
		Label  *string         `json:"label"`
		Action json.RawMessage `json:"action"`
	}
	if err := strictUnmarshal(raw, &b); err != nil {
		return Action{}, nil, badOutput("%s: %v; an action is {id, label, action}", at, err)
	}
	switch {
	case b.ID == nil || *b.ID == "" || utf8.RuneCountInString(*b.ID) > MaxIDChars:
		return Action{}, nil, badOutput("%s.id must be 1 to %d characters", at, MaxIDChars)
	case b.Label == nil || strings.TrimSpace(*b.Label) == "" || utf8.RuneCountInString(*b.Label) > MaxLabelChars:
		return Action{}, nil, badOutput("%s.label must be 1 to %d characters", at, MaxLabelChars)
	case len(b.Action) == 0:
		return Action{}, nil, badOutput("%s.action is required: {\"type\": \"host_actions\"|\"open\"|\"invoke\", ...}", at)
	}
	var kind struct {
		Type string `json:"type"`
	}
	json.Unmarshal(b.Action, &kind)
	a := Action{ID: *b.ID, Label: *b.Label, Type: kind.Type}
	switch kind.Type {
	case ActionHostActions:
		var v struct {
			Type        string            `json:"type"`
			HostActions []json.RawMessage `json:"host_actions"`
		}
		if err := strictUnmarshal(b.Action, &v); err != nil || len(v.HostActions) == 0 || len(v.HostActions) > MaxHostActions {
			return a, nil, badOutput("%s.action: a host_actions action is {\"type\": \"host_actions\", \"host_actions\": [1 to %d host actions]}", at, MaxHostActions)
		}
		if m.EffectiveStorage() == nil {
			return a, nil, badOutput("%s.action: host actions change storage, which plugin %s does not declare", at, m.ID)
		}
		list, _ := json.Marshal(v.HostActions)
		if err := storage.CheckHostActions(list); err != nil {
			return a, nil, badOutput("%s.action: %s", at, strings.ReplaceAll(models.ErrorMessage(err), "data.host_actions", "host_actions"))
		}
		return a, list, nil
	case ActionOpen:
		var v struct {
			Type       string          `json:"type"`
			Extension  string          `json:"extension"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := strictUnmarshal(b.Action, &v); err != nil {
			return a, nil, badOutput("%s.action: %v; an open action is {\"type\": \"open\", \"extension\", \"parameters\"}", at, err)
		}
		if !opensExtension(m, v.Extension) {
			return a, nil, badOutput("%s.action.extension %q is not a screen or home extension of plugin %s", at, v.Extension, m.ID)
		}
		if !isObjectOrEmpty(v.Parameters) {
			return a, nil, badOutput("%s.action.parameters must be an object", at)
		}
		a.Extension, a.Parameters = v.Extension, models.JSON(v.Parameters)
	case ActionInvoke:
		var v struct {
			Type       string          `json:"type"`
			Capability string          `json:"capability"`
			Arguments  json.RawMessage `json:"arguments"`
		}
		if err := strictUnmarshal(b.Action, &v); err != nil {
			return a, nil, badOutput("%s.action: %v; an invoke action is {\"type\": \"invoke\", \"capability\", \"arguments\"}", at, err)
		}
		if c, ok := m.Capability(v.Capability); !ok || !c.Runnable() || (c.Kind != models.KindTool && c.Kind != models.KindSkill) {
			return a, nil, badOutput("%s.action.capability %q is not a runnable tool or skill of plugin %s", at, v.Capability, m.ID)
		}
		if !isObjectOrEmpty(v.Arguments) {
			return a, nil, badOutput("%s.action.arguments must be an object", at)
		}
		a.Capability, a.Arguments = v.Capability, models.JSON(v.Arguments)
	default:
		return a, nil, badOutput("%s.action.type %q: want host_actions, open or invoke", at, kind.Type)
	}
	return a, nil, nil
}

func opensExtension(m *models.Manifest, id string) bool {
	for _, e := range m.Extensions {
		if e.ID == id && (e.Point == models.PointScreen || e.Point == models.PointHome) {
			return true
		}
	}
	return false
}

func isObjectOrEmpty(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || t[0] == '{'
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// Service keeps and delivers notifications.
type Service struct {
	DB      *database.DB
	Gate    *access.Gate
	Storage *storage.Service
	// Bus carries the news of a notification to the user's sockets, on
	// every replica (through Redis when there are several).
	Bus *changes.Bus
	Log *slog.Logger
}

// Topic is the bus key of a user's notifications.
func Topic(userID string) string { return "notifications:" + userID }

// Record keeps the notifications a run of capability returned for the
// target's Instance. A muted Instance's are dropped.
func (s *Service) Record(ctx context.Context, t *access.Target, capability string, list []Incoming) error {
	if len(list) == 0 || t.Instance.NotificationsMuted {
		return nil
	}
	now := time.Now().UnixMicro()
	var ids []string
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		ids = ids[:0]
		// The Instance's row, locked, orders the runs that replace the
		// same notification.
		var locked database.InstanceRow
		if err := tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Select("id").Where("id = ?", t.Instance.ID).Take(&locked).Error; err != nil {
			return err
		}
		for i, in := range list {
			actions, _ := json.Marshal(in.Actions)
			row := database.NotificationRow{
				ID: models.NewID(models.PrefixNotification), UserID: t.Installation.UserID, InstallationID: t.Installation.ID, InstanceID: t.Instance.ID,
				NoticeID: in.NoticeID, Capability: capability, Generation: t.Installation.Generation, Title: in.Title, Body: in.Body,
				Severity: in.Severity, Actions: string(actions), CreatedAt: now + int64(i),
			}
			// The same id of the same Instance replaces the earlier one.
			var old []string
			if err := tx.Model(&database.NotificationRow{}).Where("instance_id = ? AND notice_id = ?", t.Instance.ID, in.NoticeID).Pluck("id", &old).Error; err != nil {
				return err
			}
			if err := s.dropRows(tx, old); err != nil {
				return err
			}
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
			for actionID, hostActions := range in.hostActions {
				if err := tx.Create(&database.PendingActionRow{ID: row.ID + "/" + actionID, InstallationID: t.Installation.ID, InstanceID: t.Instance.ID,
					Kind: pendingKind, Payload: string(hostActions), CreatedAt: now}).Error; err != nil {
					return err
				}
			}
			ids = append(ids, row.ID)
		}
		// At most Keep a user: the oldest go.
		var beyond []string
		if err := tx.Model(&database.NotificationRow{}).Where("user_id = ?", t.Installation.UserID).
			Order("created_at DESC, id DESC").Offset(Keep).Limit(1000).Pluck("id", &beyond).Error; err != nil {
			return err
		}
		return s.dropRows(tx, beyond)
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		key := id
		s.Bus.Publish(models.StorageChange{InstanceID: Topic(t.Installation.UserID), UserID: t.Installation.UserID, Operation: models.OpNotification, Key: &key})
	}
	return nil
}

// dropRows deletes notifications and their pending actions.
func (s *Service) dropRows(tx *gorm.DB, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := tx.Where("id IN ?", ids).Delete(&database.NotificationRow{}).Error; err != nil {
		return err
	}
	for _, id := range ids {
		// A notification's actions are "ID/ACTION": the ids from "ID/" up
		// to "ID0" ('0' follows '/'), under the binary collation of both
		// databases.
		if err := tx.Where("id >= ? AND id < ?", id+"/", id+"0").Delete(&database.PendingActionRow{}).Error; err != nil {
			return err
		}
	}
	return nil
}

// List returns a page of the user's notifications, newest first; only the
// unread ones when unreadOnly.
func (s *Service) List(ctx context.Context, userID string, unreadOnly bool, args models.PageArgs) (*models.Page[*Notification], error) {
	const list = "notifications"
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(list, 2)
	if err != nil {
		return nil, err
	}
	q := s.DB.Read.WithContext(ctx).Where("user_id = ?", userID)
	if unreadOnly {
		q = q.Where("read_at = 0")
	}
	if after != nil {
		at, err := models.CursorInt(list, after[0])
		if err != nil {
			return nil, err
		}
		q = q.Where("created_at < ? OR (created_at = ? AND id < ?)", at, at, after[1])
	}
	var rows []database.NotificationRow
	if err := q.Order("created_at DESC, id DESC").Limit(size + 1).Find(&rows).Error; err != nil {
		return nil, err
	}
	plugins, err := s.pluginIDs(ctx, rows)
	if err != nil {
		return nil, err
	}
	read := make([]*Notification, len(rows))
	for i, r := range rows {
		n := model(r, plugins[r.InstallationID])
		read[i] = &n
	}
	return models.NewPage(list, size, read, func(n *Notification) []string {
		return []string{strconv.FormatInt(n.CreatedAt.UnixMicro(), 10), n.ID}
	}), nil
}

// Unread returns how many of the user's notifications are unread.
func (s *Service) Unread(ctx context.Context, userID string) (int, error) {
	var n int64
	err := s.DB.Read.WithContext(ctx).Model(&database.NotificationRow{}).Where("user_id = ? AND read_at = 0", userID).Count(&n).Error
	return int(n), err
}

// Get returns one of the user's notifications; another user's, or an
// unknown one, is refused as storage refuses another user's Instance.
func (s *Service) Get(ctx context.Context, userID, id string) (*Notification, error) {
	var r database.NotificationRow
	err := s.DB.Read.WithContext(ctx).Where("id = ? AND user_id = ?", id, userID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.Errorf(models.ErrPermissionDenied, "notification %q does not exist or is not yours", id)
	}
	if err != nil {
		return nil, err
	}
	plugins, err := s.pluginIDs(ctx, []database.NotificationRow{r})
	if err != nil {
		return nil, err
	}
	n := model(r, plugins[r.InstallationID])
	return &n, nil
}

func (s *Service) pluginIDs(ctx context.Context, rows []database.NotificationRow) (map[string]string, error) {
	ids := map[string]bool{}
	for _, r := range rows {
		ids[r.InstallationID] = true
	}
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	var found []database.InstallationRow
	if err := s.DB.Read.WithContext(ctx).Select("id", "plugin_id").Where("id IN ?", list).Find(&found).Error; err != nil {
		return nil, err
	}
	for _, f := range found {
		out[f.ID] = f.PluginID
	}
	return out, nil
}

func model(r database.NotificationRow, pluginID string) Notification {
	n := Notification{ID: r.ID, InstanceID: r.InstanceID, PluginID: pluginID, Capability: r.Capability, NoticeID: r.NoticeID,
		Title: r.Title, Body: r.Body, Severity: r.Severity, Read: r.ReadAt != 0, CreatedAt: time.UnixMicro(r.CreatedAt).UTC(), Generation: r.Generation}
	json.Unmarshal([]byte(r.Actions), &n.Actions)
	if n.Actions == nil {
		n.Actions = []Action{}
	}
	return n
}

// MarkRead marks the user's notifications of the ids read and returns how
// many were unread; ids that are not the user's are refused, all or none.
func (s *Service) MarkRead(ctx context.Context, userID string, ids []string) (int, error) {
	if len(ids) == 0 || len(ids) > MaxPage {
		return 0, models.Errorf(models.ErrBadUserInput, "ids holds %d ids; 1 to %d", len(ids), MaxPage)
	}
	var n int64
	err := s.DB.Transact(ctx, func(tx *gorm.DB) error {
		var mine int64
		if err := tx.Model(&database.NotificationRow{}).Where("user_id = ? AND id IN ?", userID, ids).Count(&mine).Error; err != nil {
			return err
		}
		if int(mine) != len(uniq(ids)) {
			return models.Errorf(models.ErrPermissionDenied, "some of the notifications do not exist or are not yours")
		}
		res := tx.Model(&database.NotificationRow{}).Where("user_id = ? AND id IN ? AND read_at = 0", userID, ids).Update("read_at", time.Now().UnixMicro())
		n = res.RowsAffected
		return res.Error
	})
	return int(n), err
}

func uniq(ids []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// Outcome is what taking an action did: the result of its host actions,
// the capability to invoke (the caller runs it and sets Result), or the
// extension to open.
type Outcome struct {
	Type       string
	InstanceID string
	Result     *models.ExtensionResult
	Extension  string
	Parameters models.JSON
	Capability string
	Arguments  models.JSON
}

// RunAction takes an action of one of the user's notifications, which it
// marks read. Host actions apply at the Instance's current generation (a
// notification of an older generation is PLUGIN_STORAGE_CONFLICT), as the
// capability that sent it; an invoke action says which capability to run
// with which arguments; an open action says which extension to open. The
// Instance must be usable.
func (s *Service) RunAction(ctx context.Context, userID, notificationID, actionID string) (*Outcome, error) {
	n, err := s.Get(ctx, userID, notificationID)
	if err != nil {
		return nil, err
	}
	var action *Action
	for i := range n.Actions {
		if n.Actions[i].ID == actionID {
			action = &n.Actions[i]
		}
	}
	if action == nil {
		return nil, models.Errorf(models.ErrBadUserInput, "notification %s has no action %q", notificationID, actionID)
	}
	caller := models.Caller{UserID: userID}
	t, err := s.Gate.Open(ctx, caller, n.InstanceID, access.Use)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Type: action.Type, InstanceID: n.InstanceID}
	switch action.Type {
	case ActionHostActions:
		if t.Installation.Generation != n.Generation {
			return nil, models.Errorf(models.ErrConflict, "this notification came from package generation %d; the plugin is now at generation %d", n.Generation, t.Installation.Generation)
		}
		var p database.PendingActionRow
		err := s.DB.Read.WithContext(ctx).Where("id = ? AND kind = ?", notificationID+"/"+actionID, pendingKind).Take(&p).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, models.Errorf(models.ErrPermissionDenied, "the action of notification %s is no longer available", notificationID)
		}
		if err != nil {
			return nil, err
		}
		apply := models.Caller{UserID: userID, Generation: n.Generation, Actor: models.ActorHost, Capability: n.Capability}
		res, err := s.Storage.ApplyHostActions(ctx, apply, n.InstanceID, n.Capability, json.RawMessage(p.Payload))
		if err != nil {
			return nil, err
		}
		out.Result = res
	case ActionInvoke:
		out.Capability, out.Arguments = action.Capability, models.JSON(orEmptyObject(json.RawMessage(action.Arguments)))
	case ActionOpen:
		out.Extension, out.Parameters = action.Extension, action.Parameters
	}
	// Taking an action reads the notification (it is the user's: Get said so).
	if err := s.DB.Write.WithContext(ctx).Model(&database.NotificationRow{}).Where("id = ? AND read_at = 0", notificationID).
		Update("read_at", time.Now().UnixMicro()).Error; err != nil && s.Log != nil {
		s.Log.Warn("notify: marking a notification read failed", "err", err)
	}
	return out, nil
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// feedQueue is how many notifications a subscription holds for a slow
// client; beyond it the oldest news is dropped (the list has them all).
const feedQueue = 16

// Subscribe streams the user's new notifications, from every replica,
// until ctx ends; one replaced or dropped since it was announced is skipped.
func (s *Service) Subscribe(ctx context.Context, userID string) <-chan *Notification {
	return changes.Follow(ctx, s.Bus, Topic(userID), models.OpNotification, feedQueue, func(ctx context.Context, id string) (*Notification, error) {
		return s.Get(ctx, userID, id)
	})
}
