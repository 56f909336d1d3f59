package storage

import "context"

// OperationRun is the audit operation of a capability run.
const OperationRun = "run"

// RecordRun records one capability run in the audit trail: who started it
// (c.Actor: capability, background or ai), which capability of which
// Instance, and its outcome (ok, or the failure's reason or code). It never
// records arguments, values or output.
func (s *Service) RecordRun(ctx context.Context, c Caller, installationID, instanceID, outcome string) error {
	return s.recordAudit(ctx, auditRecord{
		userID: c.UserID, installationID: installationID, instanceID: instanceID,
		actor: c.Actor, capability: c.Capability, operation: OperationRun, outcome: outcome,
	})
}
