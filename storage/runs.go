package storage

import (
	"context"
	"time"

	"pluginhost/database"
)

// OperationRun is the audit operation of a capability run.
const OperationRun = "run"

// RecordRun records one capability run in the audit trail: who started it
// (c.Actor: capability, background or ai), which capability of which
// Instance, and its outcome (ok, or the failure's reason or code). It never
// records arguments, values or output.
func (s *Service) RecordRun(ctx context.Context, c Caller, installationID, instanceID, outcome string) error {
	w, err := s.DB.Write.DB()
	if err != nil {
		return err
	}
	return database.Retry(ctx, func() error {
		_, err := w.ExecContext(ctx, auditInsertSQL, auditField(c.UserID, MaxAuditIDChars), auditField(installationID, MaxAuditIDChars),
			auditField(instanceID, MaxAuditIDChars), auditField(c.Actor, MaxAuditActorChars), auditField(c.Capability, MaxAuditCapabilityChars),
			"", "", OperationRun, auditField(outcome, MaxAuditOutcomeChars), 0, 0, 0, time.Now().UnixMicro())
		return err
	})
}
