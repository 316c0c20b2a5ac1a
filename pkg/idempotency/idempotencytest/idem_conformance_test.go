package idempotencytest_test

// Mutation tests of the conformance suite: each builds a backend that is
// wrong in one way that repeats a side effect, runs idempotencytest.Run
// against it in a child process, and expects the suite to fail. A suite that
// passes such a backend lets a real backend with that bug ship.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/mutanttest"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/idempotencytest"
)

const mutantEnv = "IDEMPOTENCYTEST_MUTANT"

// mutant is the memory store's semantics with one deliberate bug (kind).
type mutant struct {
	kind    string
	mu      sync.Mutex
	records map[string]*mutRec
	index   map[string]map[string]struct{}
}

type mutRec struct {
	rec       idempotency.Record
	expiresAt time.Time
}

func newMutant(kind string) *mutant {
	return &mutant{kind: kind, records: map[string]*mutRec{}, index: map[string]map[string]struct{}{}}
}

func (m *mutant) get(key string, now time.Time) *mutRec {
	r, ok := m.records[key]
	if !ok {
		return nil
	}
	if !now.Before(r.expiresAt) {
		delete(m.records, key)
		return nil
	}
	return r
}

func clone(r idempotency.Record) idempotency.Record {
	r.Result = bytes.Clone(r.Result)
	return r
}

func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return &idempotency.StoreError{Backend: "mutant", Op: op, Err: err}
	}
	return nil
}

func (m *mutant) Claim(ctx context.Context, req idempotency.ClaimRequest) (idempotency.Claim, error) {
	if err := req.Validate(); err != nil {
		return idempotency.Claim{}, err
	}
	if err := ctxErr(ctx, "claim"); err != nil {
		return idempotency.Claim{}, err
	}
	m.mu.Lock()
	now := time.Now()
	r := m.get(req.Key, now)
	outcome := idempotency.OutcomeAcquired
	leaseOver := r != nil && !now.Before(r.rec.LeaseUntil)
	if m.kind == "completed-reclaimable" {
		// This backend allows 1s of clock skew before a lease counts as
		// over (a reasonable choice in itself).
		leaseOver = r != nil && !now.Before(r.rec.LeaseUntil.Add(time.Second))
	}
	switch {
	case m.kind == "completed-reclaimable" && leaseOver:
		// BUG: the lease is checked before the state, so a completed
		// record whose (claim-time) lease has passed is taken over.
		outcome = idempotency.OutcomeReclaimed
	case r != nil && r.rec.State == idempotency.StateCompleted:
		rec := clone(r.rec)
		m.mu.Unlock()
		return idempotency.Claim{Outcome: idempotency.OutcomeCompleted, Record: rec}, nil
	case r != nil && !leaseOver:
		rec := clone(r.rec)
		m.mu.Unlock()
		return idempotency.Claim{Outcome: idempotency.OutcomeInProgress, Record: rec}, nil
	case r != nil:
		outcome = idempotency.OutcomeReclaimed
		if m.kind == "racy-reclaim" {
			// BUG: the takeover is a read, then a write in another round
			// trip without a revision/owner check (a client-side
			// read-modify-write): concurrent reclaimers all win.
			m.mu.Unlock()
			time.Sleep(20 * time.Millisecond) // the round trip between the read and the write
			m.mu.Lock()
			r = m.records[req.Key]
			if r == nil {
				r = &mutRec{rec: idempotency.Record{Key: req.Key, CreatedAt: now}}
				m.records[req.Key] = r
			}
		}
	default:
		r = &mutRec{rec: idempotency.Record{Key: req.Key, CreatedAt: now}}
		m.records[req.Key] = r
	}
	defer m.mu.Unlock()
	r.rec.InvocationID, r.rec.Agent, r.rec.Tool = req.InvocationID, req.Agent, req.Tool
	r.rec.State = idempotency.StateInProgress
	r.rec.Result, r.rec.CompletedAt = nil, time.Time{}
	r.rec.Owner = req.Owner
	r.rec.LeaseUntil = now.Add(req.Lease)
	r.rec.ArgsHash = req.ArgsHash
	r.rec.Attempts++
	r.expiresAt = r.rec.LeaseUntil.Add(time.Minute)
	idx := m.index[req.InvocationID]
	if idx == nil {
		idx = map[string]struct{}{}
		m.index[req.InvocationID] = idx
	}
	idx[req.Key] = struct{}{}
	return idempotency.Claim{Outcome: outcome, Record: clone(r.rec)}, nil
}

func (m *mutant) owned(t idempotency.Ticket, now time.Time) (*mutRec, error) {
	r := m.get(t.Key, now)
	if r == nil {
		return nil, fmt.Errorf("%w: %s", idempotency.ErrLeaseLost, t.Key)
	}
	if r.rec.Owner != t.Owner {
		return nil, fmt.Errorf("%w: %s is held by %s", idempotency.ErrNotOwner, t.Key, r.rec.Owner)
	}
	return r, nil
}

func (m *mutant) Renew(ctx context.Context, t idempotency.Ticket, lease time.Duration) (time.Time, error) {
	if err := t.Validate(); err != nil {
		return time.Time{}, err
	}
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("renew %s: lease must be > 0", t.Key)
	}
	if err := ctxErr(ctx, "renew"); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	r, err := m.owned(t, now)
	if err != nil {
		return time.Time{}, err
	}
	if r.rec.State != idempotency.StateInProgress {
		return time.Time{}, fmt.Errorf("%w: %s is already completed", idempotency.ErrNotOwner, t.Key)
	}
	r.rec.LeaseUntil = now.Add(lease)
	r.expiresAt = r.rec.LeaseUntil.Add(time.Minute)
	return r.rec.LeaseUntil, nil
}

func (m *mutant) Complete(ctx context.Context, t idempotency.Ticket, result json.RawMessage, retention time.Duration) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if retention <= 0 {
		return fmt.Errorf("complete %s: retention must be > 0", t.Key)
	}
	if !json.Valid(result) {
		return fmt.Errorf("complete %s: result is not valid JSON", t.Key)
	}
	if err := ctxErr(ctx, "complete"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	r, err := m.owned(t, now)
	if err != nil {
		return err
	}
	if r.rec.State == idempotency.StateCompleted {
		return nil
	}
	if m.kind == "no-late-complete" && !now.Before(r.rec.LeaseUntil) {
		// BUG: an owner whose lease ran out (nobody took over) may not
		// complete, against the Store contract: the tool ran, its result
		// is dropped, and the next claim runs the effect again.
		return fmt.Errorf("%w: %s (lease over)", idempotency.ErrLeaseLost, t.Key)
	}
	r.rec.State = idempotency.StateCompleted
	r.rec.Result = bytes.Clone(result)
	r.rec.CompletedAt = now
	r.expiresAt = now.Add(retention)
	return nil
}

func (m *mutant) Release(ctx context.Context, t idempotency.Ticket) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := ctxErr(ctx, "release"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.owned(t, time.Now())
	if err != nil {
		return err
	}
	if r.rec.State == idempotency.StateCompleted {
		return fmt.Errorf("%w: %s is completed", idempotency.ErrNotOwner, t.Key)
	}
	delete(m.records, t.Key)
	return nil
}

func (m *mutant) Effects(ctx context.Context, invocationID string) ([]idempotency.Record, error) {
	if err := ctxErr(ctx, "effects"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []idempotency.Record
	for k := range m.index[invocationID] {
		if r := m.get(k, now); r != nil && r.rec.InvocationID == invocationID {
			out = append(out, clone(r.rec))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// runSuiteOnMutant runs the conformance suite on the mutant in a child
// process and fails the test when the suite passes it.
func runSuiteOnMutant(t *testing.T, kind, bug string) {
	t.Helper()
	mutanttest.Run(t, mutantEnv, kind, bug, func(t *testing.T) {
		idempotencytest.Run(t, idempotencytest.Factory{
			New: func(t *testing.T, retention time.Duration) idempotencytest.Instance {
				return idempotencytest.Instance{Store: newMutant(kind)}
			},
			MinRetention: 200 * time.Millisecond,
		})
	})
}

// Regression (found in review, twenty-first session): the suite fails a backend that takes a completed record over once its claim's lease has passed, so every redelivery or DLQ replay would repeat the effect.
func TestConformanceCatchesCompletedRecordReclaimedAfterLease(t *testing.T) {
	runSuiteOnMutant(t, "completed-reclaimable", "a completed record is taken over once its claim's lease has passed (the effect runs again on every later retry or replay)")
}

// Regression (found in review, twenty-first session): the suite fails a backend whose takeover of an expired lease is a non-atomic read-then-write, so that concurrent reclaimers all win and all run the effect.
func TestConformanceCatchesRacyReclaim(t *testing.T) {
	runSuiteOnMutant(t, "racy-reclaim", "concurrent claims of an expired lease all get OutcomeReclaimed (non-atomic takeover: every reclaimer runs the effect)")
}

// Regression (found in review, twenty-first session): the suite fails a backend that refuses Complete by an owner whose lease ran out with nobody taking over, against Store.Complete's contract, dropping the result of a tool that ran.
func TestConformanceCatchesLateCompleteRefused(t *testing.T) {
	runSuiteOnMutant(t, "no-late-complete", "Complete by the owner after its lease ran out (nobody took over) is refused with ErrLeaseLost")
}
