package extensions

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"pluginhost/database"
	"pluginhost/jsonschema"
	"pluginhost/models"
)

// containerRow is a row of response_containers: the response container of one
// AI message of one user, created when a selected response UI rendered.
type containerRow struct {
	UserID      string `gorm:"primaryKey"`
	MessageID   string `gorm:"primaryKey"`
	InstanceID  string
	ExtensionID string
	Generation  int64
	Capability  string
	CreatedAt   int64
}

func (containerRow) TableName() string { return "response_containers" }

// HandleKey derives the key of response candidate handles from the server
// secret, so that a response handle and an AI tool handle can never stand
// for each other.
func HandleKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("pluginhost response ui handles"))
	return m.Sum(nil)
}

// Candidates returns the catalog the AI picks a response UI from: one entry
// per response extension of the user's enabled Instances of installed
// plugins, with its a2ui.description and a2ui.version, and a handle bound to
// the Instance, the extension and the package generation.
func (s *Service) Candidates(ctx context.Context, user *models.User) ([]models.ResponseCandidate, error) {
	var rows []struct {
		InstanceID  string
		ExtensionID string
		Generation  int64
		Config      string
	}
	err := s.DB.Read.WithContext(ctx).Table("instances").
		Select("instances.id AS instance_id, extension_configs.extension_id, installations.generation, extension_configs.config").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Joins("JOIN extension_configs ON extension_configs.installation_id = installations.id").
		Where("instances.user_id = ? AND instances.enabled = ? AND installations.status = ? AND extension_configs.point = ?",
			user.ID, true, models.InstallationInstalled, models.PointResponse).
		Order("instances.created_at, instances.id, extension_configs.position").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("response candidates: %w", err)
	}
	out := make([]models.ResponseCandidate, 0, len(rows))
	for _, r := range rows {
		a := parseConfig([]byte(r.Config)).a2ui
		if a == nil {
			continue // a response config always has a2ui (validated)
		}
		out = append(out, models.ResponseCandidate{
			Handle: s.Handles.Issue(r.InstanceID, r.ExtensionID, r.Generation), InstanceID: r.InstanceID,
			Extension: r.ExtensionID, Description: a.Description, Version: a2uiVersion(a.Version),
		})
	}
	return out, nil
}

// a2uiVersion reads a2ui.version as an integer: a number as it is, a string
// by its leading (major) number; 0 when it has none.
func a2uiVersion(raw json.RawMessage) int {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0
	}
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		end := 0
		for end < len(x) && x[end] >= '0' && x[end] <= '9' {
			end++
		}
		n, _ := strconv.Atoi(x[:end])
		return n
	}
	return 0
}

// Selection is the AI's explicit selection of a response candidate for the
// tool result it wants shown in one of its messages.
type Selection struct {
	Handle     string
	MessageID  string
	Capability string
	Arguments  models.JSON // the tool call's arguments; null or an object
	Result     models.JSON // the tool result (an ExtensionResult)
}

// Select renders a selected response UI only when every check passes
// (contract, "Response UI"); otherwise the render lists each failed check as
// a Problem whose code is:
//   - validity: the result breaks the extension's a2ui.schema (one problem
//     per broken rule, at its JSON Pointer into the result);
//   - relevance: the config has no data source of the capability, or the
//     result's evidence names another Instance;
//   - duplicate: the message already has its response container;
//   - permission: the Instance is disabled or not the user's (nothing else
//     is checked for an Instance that is not the user's).
//
// A handle issued for an older package generation is PLUGIN_STORAGE_CONFLICT;
// a message id or capability that is empty or malformed is BAD_USER_INPUT.
// When it renders, the message's response container is recorded, and the
// render carries the config and the result as the result of each of the
// config's data sources of the capability.
func (s *Service) Select(ctx context.Context, user *models.User, sel Selection) (*models.ResponseRender, error) {
	if err := checkMessageID(sel.MessageID); err != nil {
		return nil, err
	}
	if sel.Capability == "" || len(sel.Capability) > 128 {
		return nil, models.Errorf(models.ErrBadUserInput, "capability names the capability whose result is shown: 1 to 128 characters")
	}
	if len(sel.Arguments) > 0 && string(sel.Arguments) != "null" && sel.Arguments[0] != '{' {
		return nil, models.Errorf(models.ErrBadUserInput, "arguments are the tool call's arguments: a JSON object or null")
	}
	refused := func(msg string) *models.ResponseRender {
		return &models.ResponseRender{Reasons: []models.Problem{{Path: "", Code: models.ResponsePermission, Message: msg}}}
	}
	instanceID, extension, generation, err := s.Handles.Open(sel.Handle)
	if err != nil {
		return refused("the handle is not a response candidate handle issued by this host; take one from responseCandidates"), nil
	}
	in, err := s.lookup(ctx, s.DB.Read, instanceID)
	if err != nil {
		return nil, err
	}
	if in == nil || in.UserID != user.ID || in.Status != models.InstallationInstalled {
		return refused(fmt.Sprintf("instance %q does not exist or does not belong to you", instanceID)), nil
	}
	if in.Generation != generation {
		return nil, models.Errorf(models.ErrConflict, "stale response handle: it was issued for package generation %d, the Installation is now at generation %d; take a new one from responseCandidates", generation, in.Generation)
	}
	c, err := s.config(ctx, s.DB.Read, in, extension)
	if err != nil {
		return nil, err
	}
	cfg := parseConfig([]byte(c.Config))
	var reasons []models.Problem
	if !in.Enabled {
		reasons = append(reasons, models.Problem{Code: models.ResponsePermission,
			Message: fmt.Sprintf("instance %q is disabled: nothing of it is shown until it is enabled", in.ID)})
	}
	probs, err := checkResult(cfg, extension, sel.Capability, in.ID, sel.Result)
	if err != nil {
		return nil, err
	}
	reasons = append(reasons, probs...)
	dup, err := s.hasContainer(ctx, user.ID, sel.MessageID)
	if err != nil {
		return nil, err
	}
	if dup {
		reasons = append(reasons, duplicate(sel.MessageID))
	}
	if len(reasons) > 0 {
		return &models.ResponseRender{Reasons: reasons}, nil
	}
	row := containerRow{UserID: user.ID, MessageID: sel.MessageID, InstanceID: in.ID, ExtensionID: extension,
		Generation: generation, Capability: sel.Capability, CreatedAt: time.Now().UnixMicro()}
	if err := s.DB.Write.WithContext(ctx).Create(&row).Error; err != nil {
		if database.IsDuplicate(err) { // a concurrent selection for the same message won
			return &models.ResponseRender{Reasons: []models.Problem{duplicate(sel.MessageID)}}, nil
		}
		return nil, fmt.Errorf("record response container: %w", err)
	}
	data := map[string]json.RawMessage{}
	for _, src := range cfg.sources {
		if src.Capability == sel.Capability {
			data[src.ID] = json.RawMessage(sel.Result)
		}
	}
	b, err := compactJSON(data)
	if err != nil {
		return nil, err
	}
	ext, gen := extension, generation
	return &models.ResponseRender{Rendered: true, Reasons: []models.Problem{}, InstanceID: &in.ID, Extension: &ext,
		Generation: &gen, Config: models.JSON(c.Config), Data: b}, nil
}

// CheckResult runs the checks of a response selection that need neither a
// user nor a message, validity and relevance, for a tool result of
// capability shown by a response config as the Instance instanceID. The
// preview shows their verdict for a sample result; Select runs them for the
// real one.
func CheckResult(config []byte, extension, capability, instanceID string, result []byte) ([]models.Problem, error) {
	return checkResult(parseConfig(config), extension, capability, instanceID, result)
}

func checkResult(cfg config, extension, capability, instanceID string, result []byte) ([]models.Problem, error) {
	probs, err := validity(cfg, result)
	if err != nil {
		return nil, err
	}
	return append(probs, relevance(cfg, instanceID, extension, capability, result)...), nil
}

// checkMessageID requires an AI message id: 1 to 128 characters, no control
// characters.
func checkMessageID(id string) error {
	if id == "" || !utf8.ValidString(id) || utf8.RuneCountInString(id) > models.MaxMessageIDLength ||
		strings.IndexFunc(id, unicode.IsControl) >= 0 {
		return models.Errorf(models.ErrBadUserInput, "messageId names the AI message: 1 to %d characters, no control characters", models.MaxMessageIDLength)
	}
	return nil
}

func duplicate(messageID string) models.Problem {
	return models.Problem{Code: models.ResponseDuplicate,
		Message: fmt.Sprintf("message %q already has its response container; a message shows at most one response UI", messageID)}
}

// validity checks the result against a2ui.schema with the JSON Schema subset
// engine of capability schemas; each problem names its JSON Pointer into the
// result.
func validity(cfg config, result models.JSON) ([]models.Problem, error) {
	if cfg.a2ui == nil || len(cfg.a2ui.Schema) == 0 {
		return []models.Problem{{Code: models.ResponseValidity, Message: "the extension declares no a2ui.schema, so no result can be shown with it"}}, nil
	}
	schema, err := jsonschema.Compile(cfg.a2ui.Schema, jsonschema.AnyRoot)
	if err != nil {
		return nil, fmt.Errorf("a2ui.schema of a validated config: %w", err)
	}
	v, err := jsonschema.Decode(result)
	if err != nil {
		return []models.Problem{{Code: models.ResponseValidity, Message: "the result is not valid JSON: " + err.Error()}}, nil
	}
	var out []models.Problem
	for _, p := range schema.Validate(v, "a2ui.schema") {
		out = append(out, models.Problem{Path: p.Path, Code: models.ResponseValidity, Message: p.Code + ": " + p.Message})
	}
	return out, nil
}

// relevance checks that the config reads the capability's result through a
// data source, and that the result's evidence names only the Instance.
func relevance(cfg config, instanceID, extension, capability string, result models.JSON) []models.Problem {
	var out []models.Problem
	found := false
	for _, src := range cfg.sources {
		found = found || src.Capability == capability
	}
	if !found {
		out = append(out, models.Problem{Code: models.ResponseRelevance,
			Message: fmt.Sprintf("extension %q has no data source of capability %s, so it cannot show that capability's result", extension, capability)})
	}
	var r struct {
		Evidence []struct {
			InstanceID *string `json:"instance_id"`
		} `json:"evidence"`
	}
	if json.Unmarshal(result, &r) != nil {
		return out // a result of another shape has no evidence to check
	}
	for i, e := range r.Evidence {
		if e.InstanceID != nil && *e.InstanceID != instanceID {
			out = append(out, models.Problem{Path: fmt.Sprintf("/evidence/%d/instance_id", i), Code: models.ResponseRelevance,
				Message: fmt.Sprintf("the result's evidence names instance %q, not the instance %q of the selected response UI", *e.InstanceID, instanceID)})
		}
	}
	return out
}

func (s *Service) hasContainer(ctx context.Context, userID, messageID string) (bool, error) {
	var row containerRow
	err := s.DB.Read.WithContext(ctx).Where("user_id = ? AND message_id = ?", userID, messageID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	return err == nil, err
}
