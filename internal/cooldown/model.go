package cooldown

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Model decorates a provider model: it records the outcome of every call in
// the Store and, while the model's cooldown is open, returns an *OpenError
// without calling the provider. Place it inside the retry decorator so every
// provider attempt is recorded. The breaker fails open: if the store cannot
// be reached the call goes ahead (a broken breaker must not stop the fleet).
type Model struct {
	inner       model.Model
	store       Store
	cfg         Config
	isTransient func(error) bool
	now         func() time.Time
	metrics     *Metrics

	mu        sync.Mutex
	until     time.Time
	checkedAt time.Time
}

// Wrap returns inner guarded by the breaker. isTransient decides which
// errors count as failures (the taxonomy's reliability classes).
func Wrap(inner model.Model, store Store, cfg Config, isTransient func(error) bool) *Model {
	return &Model{inner: inner, store: store, cfg: cfg.WithDefaults(), isTransient: isTransient, now: time.Now}
}

// Name implements model.Model.
func (m *Model) Name() string { return m.inner.Name() }

// recordTimeout bounds the store write that records a call's outcome.
const recordTimeout = 2 * time.Second

// GenerateContent implements model.Model.
func (m *Model) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	if m.cfg.Disabled {
		return m.inner.GenerateContent(ctx, req, stream)
	}
	return func(yield func(*model.Response, error) bool) {
		if until := m.openUntil(ctx); !until.IsZero() {
			m.metrics.rejected(m.inner.Name())
			yield(nil, &OpenError{Model: m.inner.Name(), Until: until})
			return
		}
		var callErr error
		for resp, err := range m.inner.GenerateContent(ctx, req, stream) {
			if err != nil {
				callErr = err
			}
			if !yield(resp, err) {
				break
			}
		}
		if errors.Is(callErr, context.Canceled) || ctx.Err() != nil && callErr == nil {
			return
		}
		if callErr != nil && ctx.Err() != nil && context.Cause(ctx) == ctx.Err() {
			// The caller's own context ended the call (its deadline: a
			// plain cause). Not the provider's failure: impatient callers
			// must not open the fleet's cooldown for a healthy model
			// (found in review, seventeenth session). The retry layer's
			// attempt timeout has a cause of its own and counts below.
			return
		}
		// Recorded on a context of its own: a TIMEOUT ends the call because
		// the attempt's context ran out, and that failure must count as
		// much as any other (with ctx, Record failed on it and a provider
		// that never answers never opened the cooldown).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		until, err := m.store.Record(rctx, m.inner.Name(), callErr != nil && m.isTransient(callErr))
		if err == nil {
			// A Record answer may come from the store's local count (Redis
			// flushes successes once per CheckInterval and answers with the
			// end its last flush saw): it never shortens a cooldown this
			// decorator knows is open, or a call in flight when it opened
			// would let calls through until the next check (found in
			// review, twenty-fifth session). Status answers, which ask the
			// store, replace it (openUntil).
			now := m.now()
			m.mu.Lock()
			if until.After(m.until) || !now.Before(m.until) {
				m.until = until
			}
			until, m.checkedAt = m.until, now
			m.mu.Unlock()
			m.metrics.Observe(m.inner.Name(), until)
		}
	}
}

// openUntil returns the end of an open cooldown, asking the store at most
// once per CheckInterval.
func (m *Model) openUntil(ctx context.Context) time.Time {
	now := m.now()
	m.mu.Lock()
	if now.Sub(m.checkedAt) < m.cfg.CheckInterval {
		until := m.until
		m.mu.Unlock()
		if now.Before(until) {
			return until
		}
		return time.Time{}
	}
	m.mu.Unlock()
	until, err := m.store.Status(ctx, m.inner.Name())
	if err != nil {
		return time.Time{}
	}
	m.mu.Lock()
	m.until, m.checkedAt = until, now
	m.mu.Unlock()
	m.metrics.Observe(m.inner.Name(), until)
	if now.Before(until) {
		return until
	}
	return time.Time{}
}
