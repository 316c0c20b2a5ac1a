package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
)

// MemoryLeaseMargin is how long an in-progress record outlives its lease in
// a Memory store before it is forgotten (mirrors the Redis TTL margin).
const MemoryLeaseMargin = time.Minute

// Memory is an in-process Store for tests and demos. It is not durable and
// not shared between processes: never use it to guard real effects in a
// fleet. The zero value is not usable; call NewMemory.
type Memory struct {
	mu      sync.Mutex
	now     func() time.Time
	records map[string]*memRecord
	index   map[string]map[string]struct{} // invocation id -> keys
}

type memRecord struct {
	rec       Record
	expiresAt time.Time
}

// NewMemory returns an empty Memory store using the wall clock.
func NewMemory() *Memory {
	return &Memory{now: time.Now, records: map[string]*memRecord{}, index: map[string]map[string]struct{}{}}
}

// get returns the live record for key, forgetting it when expired.
func (m *Memory) get(key string, now time.Time) *memRecord {
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

func cloneRecord(r Record) Record {
	if r.Result != nil {
		r.Result = bytes.Clone(r.Result)
	}
	return r
}

func ctxErr(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return &StoreError{Backend: "memory", Op: op, Err: err}
	}
	return nil
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, req ClaimRequest) (Claim, error) {
	if err := req.Validate(); err != nil {
		return Claim{}, err
	}
	if err := ctxErr(ctx, "claim"); err != nil {
		return Claim{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r := m.get(req.Key, now)
	outcome := OutcomeAcquired
	switch {
	case r != nil && r.rec.State == StateCompleted:
		return Claim{Outcome: OutcomeCompleted, Record: cloneRecord(r.rec)}, nil
	case r != nil && now.Before(r.rec.LeaseUntil):
		return Claim{Outcome: OutcomeInProgress, Record: cloneRecord(r.rec)}, nil
	case r != nil:
		outcome = OutcomeReclaimed
	default:
		r = &memRecord{rec: Record{Key: req.Key, CreatedAt: now}}
		m.records[req.Key] = r
	}
	r.rec.InvocationID, r.rec.Agent, r.rec.Tool = req.InvocationID, req.Agent, req.Tool
	r.rec.State = StateInProgress
	r.rec.Owner = req.Owner
	r.rec.LeaseUntil = now.Add(req.Lease)
	r.rec.ArgsHash = req.ArgsHash
	r.rec.Attempts++
	r.expiresAt = r.rec.LeaseUntil.Add(MemoryLeaseMargin)
	idx := m.index[req.InvocationID]
	if idx == nil {
		idx = map[string]struct{}{}
		m.index[req.InvocationID] = idx
	}
	idx[req.Key] = struct{}{}
	return Claim{Outcome: outcome, Record: cloneRecord(r.rec)}, nil
}

// owned returns t's record or the fencing error.
func (m *Memory) owned(t Ticket, now time.Time) (*memRecord, error) {
	r := m.get(t.Key, now)
	if r == nil {
		return nil, fmt.Errorf("%w: %s", ErrLeaseLost, t.Key)
	}
	if r.rec.Owner != t.Owner {
		return nil, fmt.Errorf("%w: %s is held by %s", ErrNotOwner, t.Key, r.rec.Owner)
	}
	return r, nil
}

// Renew implements Store.
func (m *Memory) Renew(ctx context.Context, t Ticket, lease time.Duration) (time.Time, error) {
	if err := t.Validate(); err != nil {
		return time.Time{}, err
	}
	if lease <= 0 {
		return time.Time{}, fmt.Errorf("idempotency: renew %s: lease must be > 0", t.Key)
	}
	if err := ctxErr(ctx, "renew"); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r, err := m.owned(t, now)
	if err != nil {
		return time.Time{}, err
	}
	if r.rec.State != StateInProgress {
		return time.Time{}, fmt.Errorf("%w: %s is already completed", ErrNotOwner, t.Key)
	}
	r.rec.LeaseUntil = now.Add(lease)
	r.expiresAt = r.rec.LeaseUntil.Add(MemoryLeaseMargin)
	return r.rec.LeaseUntil, nil
}

// Complete implements Store.
func (m *Memory) Complete(ctx context.Context, t Ticket, result json.RawMessage, retention time.Duration) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if retention <= 0 {
		return fmt.Errorf("idempotency: complete %s: retention must be > 0", t.Key)
	}
	if !json.Valid(result) {
		return fmt.Errorf("idempotency: complete %s: result is not valid JSON", t.Key)
	}
	if err := ctxErr(ctx, "complete"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	r, err := m.owned(t, now)
	if err != nil {
		return err
	}
	if r.rec.State == StateCompleted {
		return nil
	}
	r.rec.State = StateCompleted
	r.rec.Result = bytes.Clone(result)
	r.rec.CompletedAt = now
	r.expiresAt = now.Add(retention)
	return nil
}

// Release implements Store.
func (m *Memory) Release(ctx context.Context, t Ticket) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := ctxErr(ctx, "release"); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.owned(t, m.now())
	if err != nil {
		return err
	}
	if r.rec.State == StateCompleted {
		return fmt.Errorf("%w: %s is completed and cannot be released", ErrNotOwner, t.Key)
	}
	delete(m.records, t.Key)
	if idx := m.index[t.InvocationID]; idx != nil {
		delete(idx, t.Key)
		if len(idx) == 0 {
			delete(m.index, t.InvocationID)
		}
	}
	return nil
}

// Effects implements Store.
func (m *Memory) Effects(ctx context.Context, invocationID string) ([]Record, error) {
	if err := ctxErr(ctx, "effects"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []Record
	for k := range m.index[invocationID] {
		r := m.get(k, now)
		if r == nil || r.rec.InvocationID != invocationID {
			delete(m.index[invocationID], k)
			continue
		}
		out = append(out, cloneRecord(r.rec))
	}
	if len(m.index[invocationID]) == 0 {
		delete(m.index, invocationID)
	}
	SortRecords(out)
	return out, nil
}

// SortRecords orders records oldest first (CreatedAt, then Key), the order
// Effects returns.
func SortRecords(rs []Record) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].CreatedAt.Equal(rs[j].CreatedAt) {
			return rs[i].CreatedAt.Before(rs[j].CreatedAt)
		}
		return rs[i].Key < rs[j].Key
	})
}
