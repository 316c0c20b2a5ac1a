package natssession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Invocations is a session.InvocationStore on a NATS KV bucket whose MaxAge
// is the retention: every transition rewrites the entry, which restarts its
// age. Transitions are revision-checked read-modify-writes, so a completed
// record is never overwritten. It is safe for concurrent use.
type Invocations struct {
	kv  jetstream.KeyValue
	cfg Config
	now func() time.Time
}

var _ session.InvocationStore = (*Invocations)(nil)

// NewInvocations opens the invocation bucket on js, creating or updating it
// with MaxAge cfg.InvocationRetention unless cfg.OpenExisting; an existing
// bucket's longer MaxAge is kept (a record a shorter one dropped would let a
// completed invocation run again). cfg gets its defaults and is validated.
func NewInvocations(ctx context.Context, js jetstream.JetStream, cfg Config) (*Invocations, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, ttl, err := openBucket(ctx, js, cfg, cfg.InvocationBucket, "agentfleet invocation status records", cfg.InvocationRetention, 0, kvbucket.KeepLonger)
	if err != nil {
		return nil, err
	}
	cfg.InvocationRetention = ttl
	return &Invocations{kv: kv, cfg: cfg, now: time.Now}, nil
}

// Retention is the invocation bucket's max age as NewInvocations found or
// set it (0: records are kept until deleted).
func (s *Invocations) Retention() time.Duration { return s.cfg.InvocationRetention }

// Get implements session.InvocationStore.
func (s *Invocations) Get(ctx context.Context, id string) (*session.Invocation, error) {
	if id == "" {
		return nil, session.ErrInvocationNotFound
	}
	k, err := invocationKey(id)
	if err != nil {
		return nil, err
	}
	rec, _, err := s.load(ctx, id, k)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, session.ErrInvocationNotFound
	}
	return rec, nil
}

// Transition implements session.InvocationStore. It returns after
// JetStream acknowledged the write.
func (s *Invocations) Transition(ctx context.Context, rec *session.Invocation) error {
	if err := session.PrepareTransition(rec); err != nil {
		return err
	}
	k, err := invocationKey(rec.ID)
	if err != nil {
		return err
	}
	for n := range s.cfg.MaxConflictRetries {
		prev, rev, err := s.load(ctx, rec.ID, k)
		if err != nil {
			return err
		}
		next, err := session.ApplyTransition(prev, rec, s.now().UTC())
		if err != nil {
			return err
		}
		data, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("natssession: encode invocation %q: %w", rec.ID, err)
		}
		if rev == 0 {
			_, err = s.kv.Create(ctx, k, data)
		} else {
			_, err = s.kv.Update(ctx, k, data, rev)
		}
		if err == nil {
			*rec = *next
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("natssession: transition invocation %q to %s: %w", rec.ID, rec.Status, err)
		}
		if err := backoff(ctx, n); err != nil {
			return err
		}
	}
	return fmt.Errorf("natssession: transition invocation %q: %w", rec.ID, ErrTooManyConflicts)
}

// load reads the record of invocation id, KV key k; nil and revision 0 if
// there is none.
func (s *Invocations) load(ctx context.Context, id, k string) (*session.Invocation, uint64, error) {
	e, err := s.kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("natssession: get invocation %q: %w", id, err)
	}
	rec := new(session.Invocation)
	if err := json.Unmarshal(e.Value(), rec); err != nil {
		return nil, 0, fmt.Errorf("natssession: decode invocation %q: %w", id, err)
	}
	return rec, e.Revision(), nil
}
