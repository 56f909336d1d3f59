package storage

import (
	"context"
	"pluginhost/models"
)

// Audit operations of capabilities.
const (
	// OperationRun is a capability run.
	OperationRun = "run"
	// OperationQuarantine is a background capability put in quarantine:
	// its schedule paused (see package schedule).
	OperationQuarantine = "quarantine"
)

// RecordRun records one capability run in the audit trail: who started it
// (c.Actor: capability, background or ai), which capability of which
// Instance, and its outcome (ok, or the failure's reason or code). It never
// records arguments, values or output.
func (s *Service) RecordRun(ctx context.Context, c models.Caller, installationID, instanceID, outcome string) error {
	return s.RecordCapability(ctx, c, installationID, instanceID, OperationRun, outcome)
}

// RecordCapability records an operation of a capability (OperationRun,
// OperationQuarantine) and its outcome in the audit trail.
func (s *Service) RecordCapability(ctx context.Context, c models.Caller, installationID, instanceID, operation, outcome string) error {
	return s.recordAudit(ctx, auditRecord{
		userID: c.UserID, installationID: installationID, instanceID: instanceID,
		actor: c.Actor, capability: c.Capability, operation: operation, outcome: outcome,
	})
}
