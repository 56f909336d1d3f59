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

	"pluginhost/access"
	"pluginhost/changes"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/uiconfig"
)

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
		Where("instances.user_id = ? AND "+access.Usable+" AND extension_configs.point = ?",
			append(append([]any{user.ID}, access.UsableArgs()...), models.PointResponse)...).
		Order("instances.created_at, instances.id, extension_configs.position").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("response candidates: %w", err)
	}
	out := make([]models.ResponseCandidate, 0, len(rows))
	for _, r := range rows {
		a := uiconfig.Read([]byte(r.Config)).A2UI
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
	// The gate's rule, but a disabled Instance is one of the checks, below,
	// and so is an Instance that is not the viewer's.
	in, err := instance(ctx, s.DB.Read, models.Caller{UserID: user.ID, Generation: generation}, instanceID, access.Manage)
	switch models.ErrorCode(err) {
	case "":
	case models.ErrPermissionDenied:
		return refused(err.Error()), nil
	default:
		return nil, err
	}
	c, err := s.config(ctx, s.DB.Read, in, extension)
	if err != nil {
		return nil, err
	}
	cfg := uiconfig.Read([]byte(c.Config))
	var reasons []models.Problem
	if !in.Instance.Enabled {
		reasons = append(reasons, models.Problem{Code: models.ResponsePermission,
			Message: fmt.Sprintf("instance %q is disabled: nothing of it is shown until it is enabled", instanceID)})
	}
	probs, err := cfg.CheckResult(extension, sel.Capability, instanceID, sel.Result)
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
	data := map[string]json.RawMessage{}
	for _, src := range cfg.Sources {
		if src.Capability == sel.Capability {
			data[src.ID] = json.RawMessage(sel.Result)
		}
	}
	b, err := compactJSON(data)
	if err != nil {
		return nil, err
	}
	kept := string(b)
	row := database.ResponseContainerRow{UserID: user.ID, MessageID: sel.MessageID, InstanceID: instanceID, ExtensionID: extension,
		Generation: generation, Capability: sel.Capability, CreatedAt: time.Now().UnixMicro(), Data: &kept}
	err = s.DB.Transact(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		// The user's newest responses keep their result; older ones only
		// the container.
		var older []string
		if err := tx.Model(&database.ResponseContainerRow{}).Where("user_id = ? AND data IS NOT NULL", user.ID).
			Order("created_at DESC, message_id DESC").Offset(KeepRendered).Limit(1000).Pluck("message_id", &older).Error; err != nil {
			return err
		}
		if len(older) == 0 {
			return nil
		}
		return tx.Model(&database.ResponseContainerRow{}).Where("user_id = ? AND message_id IN ?", user.ID, older).Update("data", nil).Error
	})
	if err != nil {
		if database.IsDuplicate(err) { // a concurrent selection for the same message won
			return &models.ResponseRender{Reasons: []models.Problem{duplicate(sel.MessageID)}}, nil
		}
		return nil, fmt.Errorf("record response container: %w", err)
	}
	if s.Bus != nil {
		key := sel.MessageID
		s.Bus.Publish(models.StorageChange{InstanceID: ResponseTopic(user.ID), UserID: user.ID, Operation: models.OpResponse, Key: &key})
	}
	ext, gen := extension, generation
	id := instanceID
	return &models.ResponseRender{Rendered: true, Reasons: []models.Problem{}, InstanceID: &id, Extension: &ext,
		Generation: &gen, Config: models.JSON(c.Config), Data: b}, nil
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

func (s *Service) hasContainer(ctx context.Context, userID, messageID string) (bool, error) {
	var row database.ResponseContainerRow
	err := s.DB.Read.WithContext(ctx).Where("user_id = ? AND message_id = ?", userID, messageID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil
	}
	return err == nil, err
}

// KeepRendered is how many of a user's newest rendered responses keep their
// result for the response surface.
const KeepRendered = 50

// renderedQueue is how many rendered responses a subscription holds for a
// slow client; beyond it the oldest news is dropped (renderedResponses has
// them all).
const renderedQueue = 16

// ResponseTopic is the bus key of a user's rendered responses.
func ResponseTopic(userID string) string { return "responses:" + userID }

// renderedList names the cursors of rendered responses.
const renderedList = "renderedResponses"

// Rendered returns a page of the user's rendered responses that a surface
// can show again, newest first: of enabled Instances of installed plugins,
// at their package's current generation.
func (s *Service) Rendered(ctx context.Context, user *models.User, args models.PageArgs) (*models.Page[*models.RenderedResponse], error) {
	size, err := args.Size()
	if err != nil {
		return nil, err
	}
	after, err := args.Position(renderedList, 2)
	if err != nil {
		return nil, err
	}
	var at int64
	if after != nil {
		if at, err = models.CursorInt(renderedList, after[0]); err != nil {
			return nil, err
		}
	}
	q := s.renderedQuery(ctx, user.ID)
	if after != nil {
		q = q.Where("response_containers.created_at < ? OR (response_containers.created_at = ? AND response_containers.message_id < ?)", at, at, after[1])
	}
	list, err := s.renderedRows(q, size+1)
	if err != nil {
		return nil, err
	}
	return models.NewPage(renderedList, size, list, func(r *models.RenderedResponse) []string {
		return []string{strconv.FormatInt(r.CreatedAt.UnixMicro(), 10), r.MessageID}
	}), nil
}

// RenderedOne returns the user's rendered response of the AI message
// messageID while a surface can show it; else PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) RenderedOne(ctx context.Context, user *models.User, messageID string) (*models.RenderedResponse, error) {
	return s.renderedOne(ctx, user.ID, messageID)
}

func (s *Service) renderedOne(ctx context.Context, userID, messageID string) (*models.RenderedResponse, error) {
	list, err := s.renderedRows(s.renderedQuery(ctx, userID).Where("response_containers.message_id = ?", messageID), 1)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, models.Errorf(models.ErrPermissionDenied, "no response of message %q is yours to show", messageID)
	}
	return list[0], nil
}

// renderedQuery selects the user's rendered responses that a surface can
// show again.
func (s *Service) renderedQuery(ctx context.Context, userID string) *gorm.DB {
	return s.DB.Read.WithContext(ctx).Table("response_containers").Select("response_containers.*").
		Joins("JOIN instances ON instances.id = response_containers.instance_id").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("response_containers.user_id = ? AND response_containers.data IS NOT NULL AND instances.user_id = ? AND "+access.Usable+
			" AND installations.generation = response_containers.generation", append([]any{userID, userID}, access.UsableArgs()...)...)
}

// renderedRows reads up to n responses of q, newest first.
func (s *Service) renderedRows(q *gorm.DB, n int) ([]*models.RenderedResponse, error) {
	var rows []database.ResponseContainerRow
	if err := q.Order("response_containers.created_at DESC, response_containers.message_id DESC").Limit(n).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("rendered responses: %w", err)
	}
	out := make([]*models.RenderedResponse, 0, len(rows))
	for _, r := range rows {
		out = append(out, &models.RenderedResponse{UserID: r.UserID, MessageID: r.MessageID, InstanceID: r.InstanceID, Extension: r.ExtensionID,
			Capability: r.Capability, Generation: r.Generation, CreatedAt: time.UnixMicro(r.CreatedAt).UTC(), Data: models.JSON(*r.Data)})
	}
	return out, nil
}

// SubscribeRendered streams the responses rendered for the user from now
// on, from every replica, until ctx ends; one whose Instance is gone or
// disabled since is skipped.
func (s *Service) SubscribeRendered(ctx context.Context, userID string) <-chan *models.RenderedResponse {
	return changes.Follow(ctx, s.Bus, ResponseTopic(userID), models.OpResponse, renderedQueue, func(ctx context.Context, messageID string) (*models.RenderedResponse, error) {
		r, err := s.renderedOne(ctx, userID, messageID)
		if err != nil {
			return nil, fmt.Errorf("rendered response %q: not shown (%w)", messageID, err)
		}
		return r, nil
	})
}
