package storage

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"pluginhost/access"
	"pluginhost/database"
	"pluginhost/models"
)

// Audit outcomes besides the error codes of refused attempts.
const OutcomeOK = "ok"

// Bounds of the recorded fields, in characters (Unicode code points), equal to
// their columns' lengths. A field is recorded as valid UTF-8 without control,
// format or bidi control characters (each becomes U+FFFD) and, when longer
// than its bound, as its first bound-1 characters followed by "…": the record
// of a refused call never holds more than a bounded prefix of the input, is
// never cut inside a character, and always fits its column, so that it is
// never lost to "data too long" on MySQL/MariaDB.
const (
	MaxAuditIDChars         = 40  // user, Installation and Instance ids
	MaxAuditActorChars      = 16  // ai, host
	MaxAuditCapabilityChars = 128 // a dotted capability id is at most 128
	MaxAuditNamespaceChars  = 64  // a safe identifier is at most 64
	MaxAuditKeyChars        = models.MaxKeyLength
	MaxAuditOperationChars  = 16
	MaxAuditOutcomeChars    = 48
)

// auditField returns s as it is recorded in a field of at most n characters.
func auditField(s string, n int) string {
	var b strings.Builder
	count := 0
	for i, r := range s {
		if count == n {
			// More follows: the last kept character gives way to the mark.
			out := []rune(b.String())
			return string(out[:n-1]) + "…"
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				r = unicode.ReplacementChar
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			r = unicode.ReplacementChar
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}

// auditRecord is one record of the audit trail, as a caller gives it: each
// field is bounded (auditField) when it is written.
type auditRecord struct {
	userID, installationID, instanceID string
	actor, capability                  string
	namespace, key                     string
	operation, outcome                 string
	before, after, valueBytes          int64
	at                                 time.Time // when it happened; zero: when written
}

// args returns the arguments of auditInsertSQL that record r.
func (r auditRecord) args() []any {
	at := r.at
	if at.IsZero() {
		at = time.Now()
	}
	return []any{auditField(r.userID, MaxAuditIDChars), auditField(r.installationID, MaxAuditIDChars),
		auditField(r.instanceID, MaxAuditIDChars), auditField(r.actor, MaxAuditActorChars),
		auditField(r.capability, MaxAuditCapabilityChars), auditField(r.namespace, MaxAuditNamespaceChars),
		auditField(r.key, MaxAuditKeyChars), auditField(r.operation, MaxAuditOperationChars),
		auditField(r.outcome, MaxAuditOutcomeChars), r.before, r.after, r.valueBytes, at.UnixMicro()}
}

// recordAudit writes r in a transaction of its own, run again when the database
// aborts it as retryable (database.Retry).
func (s *Service) recordAudit(ctx context.Context, r auditRecord) error {
	w, err := s.DB.Write.DB()
	if err != nil {
		return err
	}
	return database.Retry(ctx, func() error {
		_, err := w.ExecContext(ctx, auditInsertSQL, r.args()...)
		return err
	})
}

// auditMutation records one change of an audited caller, in the change's
// transaction: it is committed exactly when the change is.
func (s *Service) auditMutation(ctx context.Context, tx *sql.Tx, c models.Caller, sc *scope, m mutation) error {
	_, err := tx.ExecContext(ctx, auditInsertSQL, auditRecord{
		userID: c.UserID, installationID: sc.InstallationID, instanceID: sc.InstanceID,
		actor: c.Actor, capability: c.Capability, namespace: m.ns, key: m.key,
		operation: m.op, outcome: OutcomeOK, before: m.before, after: m.after, valueBytes: m.valueBytes,
	}.args()...)
	return err
}

// RecordRefusal records in the audit trail a refused call of an audited
// caller (the AI or host actions); refusals are kept although nothing changed.
func (s *Service) RecordRefusal(c models.Caller, instanceID, ns, key string, err error) {
	if c.Actor == "" || err == nil {
		return
	}
	op := operationOf(c.Capability)
	if c.Actor == models.ActorHost {
		op = "apply"
	}
	code := string(models.ErrorCode(err))
	if errors.Is(err, context.Canceled) {
		code = "CANCELLED"
	}
	dbErr := s.recordAudit(context.Background(), auditRecord{
		userID: c.UserID, instanceID: instanceID, actor: c.Actor, capability: c.Capability,
		namespace: ns, key: key, operation: op, outcome: code,
	})
	if dbErr != nil && s.Log != nil {
		s.Log.Error("storage: audit record lost", "err", dbErr, "actor", c.Actor, "instance", instanceID)
	}
}

const auditInsertSQL = `INSERT INTO storage_audit (user_id, installation_id, instance_id, actor, capability, namespace, item_key,
	operation, outcome, revision_before, revision_after, value_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// operationOf names the operation of a storage tool.
func operationOf(tool string) string {
	switch tool {
	case models.ToolCreate:
		return models.OpCreate
	case models.ToolUpdate:
		return models.OpUpdate
	case models.ToolDelete:
		return models.OpDelete
	case models.ToolList:
		return "list"
	case models.ToolGet:
		return "get"
	}
	return "apply"
}

// AuditEntry is one record of the audit trail.
type AuditEntry struct {
	ID             int64
	InstallationID string
	InstanceID     string
	Actor          string
	Capability     string
	Namespace      string
	Key            string
	Operation      string
	Outcome        string
	RevisionBefore int64
	RevisionAfter  int64
	ValueBytes     int64
	At             time.Time
}

// AuditQuery selects a user's audit records, newest first.
type AuditQuery struct {
	InstanceID string // "" for all the user's Instances
	Actor      string // "" for all actors
	Page       models.PageArgs
}

// auditList names the audit trail's cursors.
const auditList = "storageAudit"

const auditColumns = `id, installation_id, instance_id, actor, capability, namespace, item_key, operation, outcome,
	revision_before, revision_after, value_bytes, created_at`

// Audit returns a page of the user's own audit trail. An InstanceID that is
// not one of the user's Instances (another user's, or unknown: the two look
// the same) is PLUGIN_STORAGE_PERMISSION_DENIED, as for every storage
// operation, never an empty page. The user's own Instance may be read in
// any state (disabled, or of a plugin uninstalled with retain): the trail is
// the user's record of what was done, not the Instance's storage.
func (s *Service) Audit(ctx context.Context, userID string, q AuditQuery) (*models.Page[AuditEntry], error) {
	size, err := q.Page.Size()
	if err != nil {
		return nil, err
	}
	after, err := q.Page.Position(auditList, 1)
	if err != nil {
		return nil, err
	}
	switch q.Actor {
	case "", models.ActorAI, models.ActorHost, models.ActorCapability, models.ActorBackground:
	default:
		return nil, models.Errorf(models.ErrInvalid, "actor %q: want %s, %s, %s or %s", q.Actor, models.ActorAI, models.ActorHost, models.ActorCapability, models.ActorBackground)
	}
	if q.InstanceID != "" {
		r, err := s.Gate.Read(ctx, q.InstanceID)
		if err != nil {
			return nil, s.internal(err)
		}
		if err := access.Decide(models.Caller{UserID: userID}, q.InstanceID, r, access.Manage); err != nil {
			return nil, err
		}
	}
	s.flushRuns() // the records of runs still waiting to be written
	query := `SELECT ` + auditColumns + ` FROM storage_audit WHERE user_id = ?`
	args := []any{userID}
	if q.InstanceID != "" {
		query += " AND instance_id = ?"
		args = append(args, q.InstanceID)
	}
	if q.Actor != "" {
		query += " AND actor = ?"
		args = append(args, q.Actor)
	}
	if after != nil {
		before, err := models.CursorInt(auditList, after[0])
		if err != nil {
			return nil, err
		}
		query += " AND id < ?"
		args = append(args, before)
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, size+1)
	out, err := s.auditRows(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return models.NewPage(auditList, size, out, func(e AuditEntry) []string { return []string{strconv.FormatInt(e.ID, 10)} }), nil
}

// AuditRecord returns one record of the user's own audit trail; another
// user's, or an unknown one, is PLUGIN_STORAGE_PERMISSION_DENIED.
func (s *Service) AuditRecord(ctx context.Context, userID string, id int64) (*AuditEntry, error) {
	s.flushRuns()
	out, err := s.auditRows(ctx, `SELECT `+auditColumns+` FROM storage_audit WHERE user_id = ? AND id = ?`, userID, id)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, models.Errorf(models.ErrPermissionDenied, "audit record %d does not exist or is not yours", id)
	}
	return &out[0], nil
}

func (s *Service) auditRows(ctx context.Context, query string, args ...any) ([]AuditEntry, error) {
	rows, err := s.DB.Read.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, s.internal(err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &e.InstallationID, &e.InstanceID, &e.Actor, &e.Capability, &e.Namespace, &e.Key,
			&e.Operation, &e.Outcome, &e.RevisionBefore, &e.RevisionAfter, &e.ValueBytes, &at); err != nil {
			return nil, s.internal(err)
		}
		e.At = time.UnixMicro(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}
