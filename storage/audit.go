package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"pluginhost/models"
)

// Audit outcomes besides the error codes of refused attempts.
const OutcomeOK = "ok"

// auditMutation records one change of an audited caller, in the change's
// transaction: it is committed exactly when the change is.
func (s *Service) auditMutation(ctx context.Context, tx *sql.Tx, c Caller, sc *scope, m mutation) error {
	_, err := tx.ExecContext(ctx, auditInsertSQL, c.UserID, sc.InstallationID, sc.InstanceID, c.Actor, c.Capability,
		m.ns, m.key, m.op, OutcomeOK, m.before, m.after, m.valueBytes, time.Now().UnixMicro())
	return err
}

// RecordRefusal records in the audit trail a refused call of an audited
// caller (the AI or host actions); refusals are kept although nothing changed.
func (s *Service) RecordRefusal(c Caller, instanceID, ns, key string, err error) {
	if c.Actor == "" || err == nil {
		return
	}
	op := operationOf(c.Capability)
	if c.Actor == ActorHost {
		op = "apply"
	}
	code := string(models.ErrorCode(err))
	if errors.Is(err, context.Canceled) {
		code = "CANCELLED"
	}
	w, dbErr := s.DB.Write.DB()
	if dbErr == nil {
		_, dbErr = w.Exec(auditInsertSQL, c.UserID, "", instanceID, c.Actor, c.Capability, ns, truncate(key, models.MaxKeyLength), op, code, 0, 0, 0, time.Now().UnixMicro())
	}
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

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
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
	Limit      int    // 1 to 100; 0 selects 50
	Before     int64  // continue below this record id (the previous page's cursor); 0 starts at the newest
}

// Audit returns the user's own audit trail.
func (s *Service) Audit(ctx context.Context, userID string, q AuditQuery) ([]AuditEntry, bool, error) {
	if q.Limit == 0 {
		q.Limit = 50
	}
	if q.Limit < 1 || q.Limit > 100 {
		return nil, false, models.Errorf(models.ErrInvalid, "limit is %d; it must be from 1 to 100", q.Limit)
	}
	if q.Actor != "" && q.Actor != ActorAI && q.Actor != ActorHost {
		return nil, false, models.Errorf(models.ErrInvalid, "actor %q: want %s or %s", q.Actor, ActorAI, ActorHost)
	}
	query := `SELECT id, installation_id, instance_id, actor, capability, namespace, item_key, operation, outcome,
		revision_before, revision_after, value_bytes, created_at FROM storage_audit WHERE user_id = ?`
	args := []any{userID}
	if q.InstanceID != "" {
		query += " AND instance_id = ?"
		args = append(args, q.InstanceID)
	}
	if q.Actor != "" {
		query += " AND actor = ?"
		args = append(args, q.Actor)
	}
	if q.Before > 0 {
		query += " AND id < ?"
		args = append(args, q.Before)
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, q.Limit+1)
	rows, err := s.DB.Read.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return nil, false, s.internal(err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &e.InstallationID, &e.InstanceID, &e.Actor, &e.Capability, &e.Namespace, &e.Key,
			&e.Operation, &e.Outcome, &e.RevisionBefore, &e.RevisionAfter, &e.ValueBytes, &at); err != nil {
			return nil, false, s.internal(err)
		}
		e.At = time.UnixMicro(at).UTC()
		out = append(out, e)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, rows.Err()
}
