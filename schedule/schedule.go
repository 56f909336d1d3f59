// Package schedule runs the background capabilities of every enabled Instance
// every schedule_seconds, across replicas that share a database: exactly one
// replica runs a given Instance and capability per period.
//
// Each scheduled capability of each Instance has a row in
// background_schedules whose next_run_at is when its next period starts. A
// replica claims a due period by moving next_run_at on, in one UPDATE that
// matches the value it read (and takes a lease, renewed while the run is
// under way); only one UPDATE can match, so only one replica runs that
// period, and a period that no replica claims while one is up is claimed at
// its next pass.
// A failed run backs off: the next run is after the period doubled per
// failure in a row, up to one hour (never sooner than the period).
//
// A capability is quarantined, its schedule paused, when its runs keep
// failing (QuarantineAfter failures in a row), when a run crashed the
// engine (contained), or when a run did not finish: its lease ran out with
// no outcome recorded, so the replica running it stopped, perhaps because
// of it. A restart therefore never runs again what was running when the
// process died. A replica that shuts down releases its leases, so that a
// run it gave up is not taken for a crash. Resume, or a new package, lifts
// the quarantine.
package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"pluginhost/access"
	"pluginhost/capability"
	"pluginhost/database"
	"pluginhost/models"
	"pluginhost/sandbox"
	"pluginhost/storage"
)

// MaxBackoff bounds the wait after failed runs.
const MaxBackoff = time.Hour

// BusyRetry is how soon a background run the host had no slot for is tried
// again.
const BusyRetry = 10 * time.Second

// LeaseSlack is what a lease allows beyond a run's wall time for what is
// around it (waiting for a slot or a compilation, the snapshot, the host
// actions, the audit); the lease is renewed while the run is under way, so
// a run that is slow but alive is never taken for lost, only one whose
// replica died.
const LeaseSlack = time.Minute

// QuarantineAfter is how many failed runs in a row quarantine a capability.
const QuarantineAfter = 10

// Outcomes the scheduler records besides those of runs.
const (
	// OutcomeLost is a run that did not finish: the replica running it
	// stopped before it recorded how the run ended.
	OutcomeLost = "lost"
	// OutcomeQuarantined is the outcome of the audit trail's record of a
	// quarantine (operation storage.OperationQuarantine).
	OutcomeQuarantined = "quarantined"
)

// DefaultTick is how often a replica looks for due runs.
const DefaultTick = time.Second

// Scheduler runs due background capabilities.
type Scheduler struct {
	DB     *database.DB
	Runner *capability.Service
	// Gate lists the Instances whose capabilities run.
	Gate *access.Gate
	// Owner names this replica in leases; random when empty.
	Owner string
	// Tick is how often to look for due runs; DefaultTick when zero.
	Tick time.Duration
	// Lease is how long a claimed run may take before another replica takes
	// it for lost; three wall times of a run and LeaseSlack when zero.
	Lease time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log *slog.Logger

	stop chan struct{}
	done chan struct{}
}

// Start looks for due runs every Tick until Close.
func (s *Scheduler) Start(ctx context.Context) {
	s.defaults()
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(s.done)
		defer cancel()
		t := time.NewTicker(s.Tick)
		defer t.Stop()
		for {
			if err := s.Pass(ctx); err != nil && s.Log != nil && ctx.Err() == nil {
				s.Log.Error("schedule: pass failed", "err", err)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		<-s.stop
		cancel()
	}()
}

// Close stops looking for runs and waits for the runs under way.
func (s *Scheduler) Close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
}

func (s *Scheduler) defaults() {
	if s.Tick == 0 {
		s.Tick = DefaultTick
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Lease == 0 {
		s.Lease = 3*s.Runner.Engine.Limits().Timeout + LeaseSlack
	}
	if s.Owner == "" {
		b := make([]byte, 8)
		rand.Read(b)
		s.Owner = "replica-" + hex.EncodeToString(b)
	}
}

// due is one period of one scheduled capability that may be claimed.
type due struct {
	InstanceID     string
	Capability     string
	NextRunAt      int64
	Failures       int
	UserID         string
	InstallationID string
	period         time.Duration
}

// Pass makes one round: it adds the schedules of new Instances and
// capabilities, claims every due period it can, runs them and records how
// they ended. It returns when those runs are over.
func (s *Scheduler) Pass(ctx context.Context) error {
	s.defaults()
	periods, err := s.sync(ctx)
	if err != nil {
		return err
	}
	now := s.Now()
	if err := s.quarantineLost(ctx, now); err != nil {
		return err
	}
	var rows []due
	err = s.DB.Read.WithContext(ctx).Table("background_schedules").
		Select("background_schedules.instance_id, background_schedules.capability, background_schedules.next_run_at, background_schedules.failures, "+
			"instances.user_id, instances.installation_id").
		Joins("JOIN instances ON instances.id = background_schedules.instance_id").
		Joins("JOIN installations ON installations.id = instances.installation_id").
		Where("background_schedules.next_run_at <= ? AND background_schedules.lease_until <= ? AND background_schedules.quarantined_at = 0 AND "+access.Usable,
			append([]any{now.UnixMicro(), now.UnixMicro()}, access.UsableArgs()...)...).
		Order("background_schedules.next_run_at").Limit(256).Scan(&rows).Error
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, d := range rows {
		period, ok := periods[[2]string{d.InstanceID, d.Capability}]
		if !ok {
			continue // no longer scheduled: sync drops it
		}
		d.period = period
		claimed, err := s.claim(ctx, d, now)
		if err != nil {
			return err
		}
		if !claimed {
			continue // another replica owns this period
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(ctx, d)
		}()
	}
	wg.Wait()
	return nil
}

// claim takes a due period: next_run_at moves to the next period, only if
// no other replica moved it first.
func (s *Scheduler) claim(ctx context.Context, d due, now time.Time) (bool, error) {
	next := time.UnixMicro(d.NextRunAt).Add(d.period)
	if !next.After(now) {
		next = now.Add(d.period) // periods missed while no replica was up are not replayed
	}
	res := s.DB.Write.WithContext(ctx).Exec(`UPDATE background_schedules SET next_run_at = ?, lease_owner = ?, lease_until = ?
		WHERE instance_id = ? AND capability = ? AND next_run_at = ? AND lease_until <= ?`,
		next.UnixMicro(), s.Owner, now.Add(s.Lease).UnixMicro(), d.InstanceID, d.Capability, d.NextRunAt, now.UnixMicro())
	return res.RowsAffected == 1, res.Error
}

// run makes the claimed run and records how it ended: a failure backs off,
// and quarantines the capability when it is a crash or the last of
// QuarantineAfter in a row. A run given up because this replica is shutting
// down releases its lease, due again at once for another replica.
func (s *Scheduler) run(ctx context.Context, d due) {
	stop := s.renew(ctx, d)
	_, err := s.Runner.Run(ctx, capability.Call{Caller: models.Caller{UserID: d.UserID}, InstanceID: d.InstanceID, Capability: d.Capability, Trigger: sandbox.TriggerSchedule})
	stop()
	write := s.DB.Write.WithContext(context.WithoutCancel(ctx)).Table("background_schedules").
		Where("instance_id = ? AND capability = ? AND lease_owner = ?", d.InstanceID, d.Capability, s.Owner)
	now := s.Now()
	if ctx.Err() != nil {
		err := write.Updates(map[string]any{"lease_owner": "", "lease_until": 0, "next_run_at": now.UnixMicro()}).Error
		if err != nil && s.Log != nil {
			s.Log.Error("schedule: releasing a lease failed", "err", err, "instance", d.InstanceID, "capability", d.Capability)
		}
		return
	}
	outcome := capability.Outcome(err)
	set := map[string]any{"last_run_at": now.UnixMicro(), "last_outcome": outcome, "lease_owner": "", "lease_until": 0, "failures": 0}
	quarantined := false
	switch {
	case outcome == models.ReasonBusy:
		// The host had no slot for it: not the capability's failure, and
		// its period is not lost: it is due again after BusyRetry (or at
		// its next period, when that comes first), its failures as they
		// were.
		set["failures"] = d.Failures
		retry := now.Add(BusyRetry)
		if next := time.UnixMicro(d.NextRunAt).Add(d.period); retry.Before(next) {
			set["next_run_at"] = retry.UnixMicro()
		}
	case err != nil:
		failures := d.Failures + 1
		set["failures"] = failures
		set["next_run_at"] = now.Add(Backoff(d.period, failures)).UnixMicro()
		if quarantined = outcome == models.ReasonCrash || failures >= QuarantineAfter; quarantined {
			set["quarantined_at"] = now.UnixMicro()
		}
		if s.Log != nil {
			s.Log.Warn("background run failed", "instance", d.InstanceID, "capability", d.Capability, "outcome", outcome, "failures", failures,
				"quarantined", quarantined)
		}
	}
	if err := write.Updates(set).Error; err != nil && s.Log != nil {
		s.Log.Error("schedule: recording a run failed", "err", err, "instance", d.InstanceID, "capability", d.Capability)
	}
	if quarantined {
		s.recordQuarantine(ctx, d)
	}
}

// renew keeps the lease of a claimed run while the run is under way,
// extending it every third of a lease, so that only a run whose replica
// stopped is taken for lost, however long a loaded machine makes the wait
// for a slot or a compilation. The function it returns stops the renewal
// and waits for a renewal in flight.
func (s *Scheduler) renew(ctx context.Context, d due) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(s.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := s.DB.Write.WithContext(ctx).Exec(`UPDATE background_schedules SET lease_until = ?
				WHERE instance_id = ? AND capability = ? AND lease_owner = ?`,
				s.Now().Add(s.Lease).UnixMicro(), d.InstanceID, d.Capability, s.Owner).Error
			if err != nil && ctx.Err() == nil && s.Log != nil {
				s.Log.Error("schedule: renewing a lease failed", "err", err, "instance", d.InstanceID, "capability", d.Capability)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// quarantineLost finds runs that did not finish, their lease run out with no
// outcome recorded, and quarantines their capabilities.
func (s *Scheduler) quarantineLost(ctx context.Context, now time.Time) error {
	var lost []struct {
		InstanceID     string
		Capability     string
		UserID         string
		InstallationID string
		LeaseOwner     string
		LeaseUntil     int64
	}
	err := s.DB.Read.WithContext(ctx).Table("background_schedules").
		Select("background_schedules.instance_id, background_schedules.capability, background_schedules.lease_owner, "+
			"background_schedules.lease_until, instances.user_id, instances.installation_id").
		Joins("JOIN instances ON instances.id = background_schedules.instance_id").
		Where("background_schedules.lease_owner <> '' AND background_schedules.lease_until <= ? AND background_schedules.quarantined_at = 0", now.UnixMicro()).
		Limit(256).Scan(&lost).Error
	if err != nil {
		return err
	}
	for _, l := range lost {
		res := s.DB.Write.WithContext(ctx).Exec(`UPDATE background_schedules
			SET lease_owner = '', lease_until = 0, last_run_at = ?, last_outcome = ?, failures = failures + 1, quarantined_at = ?
			WHERE instance_id = ? AND capability = ? AND lease_owner = ? AND lease_until = ?`,
			now.UnixMicro(), OutcomeLost, now.UnixMicro(), l.InstanceID, l.Capability, l.LeaseOwner, l.LeaseUntil)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 { // another replica may have seen it first
			if s.Log != nil {
				s.Log.Warn("background run did not finish: the capability is quarantined", "instance", l.InstanceID, "capability", l.Capability,
					"replica", l.LeaseOwner)
			}
			s.recordQuarantine(ctx, due{InstanceID: l.InstanceID, Capability: l.Capability, UserID: l.UserID, InstallationID: l.InstallationID})
		}
	}
	return nil
}

// recordQuarantine writes the quarantine in the Instance's audit trail.
func (s *Scheduler) recordQuarantine(ctx context.Context, d due) {
	who := models.Caller{UserID: d.UserID, Actor: models.ActorBackground, Capability: d.Capability}
	err := s.Runner.Storage.RecordCapability(context.WithoutCancel(ctx), who, d.InstallationID, d.InstanceID, storage.OperationQuarantine, OutcomeQuarantined)
	if err != nil && s.Log != nil {
		s.Log.Error("schedule: audit record lost", "err", err, "instance", d.InstanceID, "capability", d.Capability)
	}
}

// Resume lifts the quarantine of a background capability of an Instance the
// caller may see (the resolver checks it): it is due at once, its failures
// forgotten.
func (s *Scheduler) Resume(ctx context.Context, instanceID, capabilityID string) error {
	return s.DB.Write.WithContext(ctx).Exec(`UPDATE background_schedules SET quarantined_at = 0, failures = 0, next_run_at = ?
		WHERE instance_id = ? AND capability = ? AND quarantined_at <> 0`, s.now().UnixMicro(), instanceID, capabilityID).Error
}

// Backoff is the wait before the next run after failures failed runs in a
// row: the period doubled per failure, at most MaxBackoff, never less than
// the period.
func Backoff(period time.Duration, failures int) time.Duration {
	d := period
	for i := 0; i < failures && d < MaxBackoff; i++ {
		d *= 2
	}
	return max(min(d, MaxBackoff), period)
}

// sync adds a schedule, due at once, for every scheduled capability of every
// enabled Instance that has none, and drops schedules of capabilities their
// package no longer schedules. It returns the period of every scheduled
// capability of every enabled Instance, by Instance and capability.
func (s *Scheduler) sync(ctx context.Context) (map[[2]string]time.Duration, error) {
	instances, err := s.Gate.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var existing []struct {
		InstanceID string
		Capability string
	}
	if err := s.DB.Read.WithContext(ctx).Table("background_schedules").Select("instance_id, capability").Scan(&existing).Error; err != nil {
		return nil, err
	}
	have := map[[2]string]bool{}
	for _, e := range existing {
		have[[2]string{e.InstanceID, e.Capability}] = true
	}
	enabled := map[string]bool{}
	wanted := map[[2]string]time.Duration{}
	now := s.Now().UnixMicro()
	for _, t := range instances {
		enabled[t.Instance.ID] = true
		scheduled := capability.Scheduled(t.Manifest)
		if len(scheduled) > 0 {
			// This replica compiles the package's modules ahead of the
			// first run it claims, which would otherwise spend its period
			// compiling.
			s.Runner.Prepare(t)
		}
		for _, c := range scheduled {
			key := [2]string{t.Instance.ID, c.ID}
			wanted[key] = time.Duration(c.ScheduleSeconds) * time.Second
			if have[key] {
				continue
			}
			err := s.DB.Write.WithContext(ctx).Exec(`INSERT INTO background_schedules
				(instance_id, capability, next_run_at, lease_owner, lease_until, last_run_at, last_outcome, failures)
				VALUES (?, ?, ?, '', 0, 0, '', 0)`, t.Instance.ID, c.ID, now).Error
			if err != nil && !database.IsDuplicate(err) {
				return nil, err
			}
		}
	}
	// Schedules of Instances that are not enabled are kept.
	for _, e := range existing {
		if _, ok := wanted[[2]string{e.InstanceID, e.Capability}]; enabled[e.InstanceID] && !ok {
			s.DB.Write.WithContext(ctx).Exec("DELETE FROM background_schedules WHERE instance_id = ? AND capability = ?", e.InstanceID, e.Capability)
		}
	}
	return wanted, nil
}

// Run is the state of one background capability of an Instance.
type Run struct {
	Capability      string
	ScheduleSeconds int
	LastRunAt       *time.Time
	LastOutcome     string
	NextRunAt       time.Time
	Failures        int
	// QuarantinedAt is when the capability was quarantined; nil when it
	// runs on its schedule.
	QuarantinedAt *time.Time
}

// Runs returns the schedule of every scheduled background capability of an
// Instance (one the caller may see): a capability not yet picked up by a
// replica is due now.
func (s *Scheduler) Runs(ctx context.Context, inst *models.Instance) ([]Run, error) {
	r, err := s.Gate.Read(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return []Run{}, nil // gone since it was read
	}
	m, err := s.Gate.Manifest(ctx, nil, r.Installation.ID, r.Installation.Generation)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Capability    string
		NextRunAt     int64
		LastRunAt     int64
		LastOutcome   string
		Failures      int
		QuarantinedAt int64
	}
	err = s.DB.Read.WithContext(ctx).Table("background_schedules").
		Select("capability, next_run_at, last_run_at, last_outcome, failures, quarantined_at").
		Where("instance_id = ?", inst.ID).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := []Run{}
	for _, c := range capability.Scheduled(m) {
		r := Run{Capability: c.ID, ScheduleSeconds: c.ScheduleSeconds, NextRunAt: now}
		for _, row := range rows {
			if row.Capability != c.ID {
				continue
			}
			r.NextRunAt = time.UnixMicro(row.NextRunAt)
			r.Failures = row.Failures
			if row.QuarantinedAt > 0 {
				t := time.UnixMicro(row.QuarantinedAt)
				r.QuarantinedAt = &t
			}
			if row.LastRunAt > 0 {
				t := time.UnixMicro(row.LastRunAt)
				r.LastRunAt, r.LastOutcome = &t, row.LastOutcome
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
