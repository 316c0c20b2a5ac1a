package session

import (
	"context"
	"sync"
	"time"
)

// MemoryInvocations is an in-process InvocationStore for tests and embedded
// mode. Records past retention are dropped when next looked at. Its zero
// value is not usable; call NewMemoryInvocations.
type MemoryInvocations struct {
	mu        sync.Mutex
	recs      map[string]*Invocation
	retention time.Duration
	now       func() time.Time
}

// NewMemoryInvocations returns an empty store keeping records for retention
// after their last transition (DefaultInvocationRetention if not positive).
func NewMemoryInvocations(retention time.Duration) *MemoryInvocations {
	if retention <= 0 {
		retention = DefaultInvocationRetention
	}
	return &MemoryInvocations{recs: map[string]*Invocation{}, retention: retention, now: time.Now}
}

// Get implements InvocationStore.
func (m *MemoryInvocations) Get(ctx context.Context, id string) (*Invocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.live(id)
	if rec == nil {
		return nil, ErrInvocationNotFound
	}
	return cloneInvocation(rec), nil
}

// Transition implements InvocationStore.
func (m *MemoryInvocations) Transition(ctx context.Context, rec *Invocation) error {
	if err := PrepareTransition(rec); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.live(rec.ID)
	if prev != nil {
		prev = cloneInvocation(prev)
	}
	next, err := ApplyTransition(prev, rec, m.now().UTC())
	if err != nil {
		return err
	}
	m.recs[rec.ID] = cloneInvocation(next)
	*rec = *next
	return nil
}

// live returns the unexpired record for id, dropping an expired one. The
// caller holds mu.
func (m *MemoryInvocations) live(id string) *Invocation {
	rec, ok := m.recs[id]
	if !ok {
		return nil
	}
	if !m.now().Before(rec.UpdatedAt.Add(m.retention)) {
		delete(m.recs, id)
		return nil
	}
	return rec
}

func cloneInvocation(rec *Invocation) *Invocation {
	out := *rec
	out.Result = append([]byte(nil), rec.Result...)
	if len(rec.Result) == 0 {
		out.Result = nil
	}
	return &out
}
