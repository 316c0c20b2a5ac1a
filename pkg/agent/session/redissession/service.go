package redissession

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Service is a session.Service on Redis. Each session is a list of JSON
// events plus a state hash and a meta hash, changed together in one
// MULTI/EXEC transaction. It is safe for concurrent use.
type Service struct {
	rdb redis.UniversalClient
	cfg Config
	now func() time.Time
}

var _ session.Service = (*Service)(nil)

// New returns a Service on rdb. cfg gets its defaults and is validated.
func New(rdb redis.UniversalClient, cfg Config) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{rdb: rdb, cfg: cfg, now: time.Now}, nil
}

// GetOrCreate implements session.Service. It is one round trip.
func (s *Service) GetOrCreate(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	var l *load
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		l = s.queueGetOrCreate(ctx, p, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redissession: get or create %v: %w", key, err)
	}
	return l.decode()
}

// load is a GetOrCreate queued on a pipeline.
type load struct {
	key    session.Key
	events *redis.StringSliceCmd
	state  *redis.MapStringStringCmd
}

// queueGetOrCreate queues GetOrCreate's commands on p (which should be a
// MULTI/EXEC pipeline, so the events and state are one snapshot).
func (s *Service) queueGetOrCreate(ctx context.Context, p redis.Pipeliner, key session.Key) *load {
	ks := s.cfg.sessionKeys(key)
	p.HSetNX(ctx, ks.meta, "created_at", s.now().UTC().Format(time.RFC3339Nano))
	s.touch(ctx, p, ks)
	return &load{key: key, events: p.LRange(ctx, ks.events, 0, -1), state: p.HGetAll(ctx, ks.state)}
}

func (l *load) decode() (*session.Session, error) {
	if err := l.events.Err(); err != nil {
		return nil, fmt.Errorf("redissession: get or create %v: %w", l.key, err)
	}
	if err := l.state.Err(); err != nil {
		return nil, fmt.Errorf("redissession: get or create %v: %w", l.key, err)
	}
	return decodeSession(l.key, l.events.Val(), l.state.Val())
}

// Get implements session.Service. It is one round trip and reads a
// consistent snapshot (MULTI/EXEC).
func (s *Service) Get(ctx context.Context, key session.Key) (*session.Session, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	ks := s.cfg.sessionKeys(key)
	var exists *redis.IntCmd
	var events *redis.StringSliceCmd
	var state *redis.MapStringStringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		exists = p.Exists(ctx, ks.meta)
		events = p.LRange(ctx, ks.events, 0, -1)
		state = p.HGetAll(ctx, ks.state)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redissession: get %v: %w", key, err)
	}
	if exists.Val() == 0 {
		return nil, session.ErrNotFound
	}
	return decodeSession(key, events.Val(), state.Val())
}

// AppendEvent implements session.Service. The event is pushed and its state
// delta applied in one round trip (AppendEvents). It returns only after
// Redis has replied, so an event it returned nil for
// (for example the model response that asks for a tool) is stored before
// the caller goes on to run the tool. Durability beyond that is Redis's
// persistence configuration (AOF, replicas).
func (s *Service) AppendEvent(ctx context.Context, key session.Key, ev *session.Event) error {
	return s.AppendEvents(ctx, key, []*session.Event{ev})
}

var _ session.BatchAppender = (*Service)(nil)

// AppendEvents implements session.BatchAppender: one MULTI/EXEC with an
// RPUSH of all events and their state deltas applied in order.
func (s *Service) AppendEvents(ctx context.Context, key session.Key, evs []*session.Event) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if len(evs) == 0 {
		return nil
	}
	op, err := s.encodeAppend(evs)
	if err != nil {
		return err
	}
	// Always MULTI/EXEC, also for events alone: go-redis retries a plain
	// pipeline whose reply was lost (a read timeout, a reset connection),
	// which would push the events a second time; it never retries a
	// transaction, so an append is sent once and a lost reply is the
	// caller's error (review finding).
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.queueAppend(ctx, p, key, op)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redissession: append %d event(s) from %s to %v: %w", len(evs), evs[0].ID, key, err)
	}
	return nil
}

// appendOp is an append encoded for queueAppend.
type appendOp struct {
	created string // the first event's time, the session's created_at if new
	data    []any  // the events' JSON
	set     []any  // state keys and JSON values the events set
	del     []string
}

// encodeAppend stamps and encodes evs and merges their state deltas in
// order (created_at is the first event's time; empty with no events).
func (s *Service) encodeAppend(evs []*session.Event) (*appendOp, error) {
	op := &appendOp{data: make([]any, 0, len(evs))}
	state := map[string]any{} // the events' deltas merged in order; nil deletes
	for _, ev := range evs {
		if ev.Partial {
			return nil, session.ErrPartialEvent
		}
		session.Stamp(ev, s.now)
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("redissession: encode event %s: %w", ev.ID, err)
		}
		op.data = append(op.data, b)
		for k, v := range ev.Actions.StateDelta {
			state[k] = v
		}
	}
	for k, v := range state {
		if v == nil {
			op.del = append(op.del, k)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("redissession: encode state %q: %w", k, err)
		}
		op.set = append(op.set, k, string(b))
	}
	if len(evs) > 0 {
		op.created = evs[0].Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return op, nil
}

// queueAppend queues op's commands on p, which must be a MULTI/EXEC
// pipeline (see AppendEvents).
func (s *Service) queueAppend(ctx context.Context, p redis.Pipeliner, key session.Key, op *appendOp) {
	ks := s.cfg.sessionKeys(key)
	p.HSetNX(ctx, ks.meta, "created_at", op.created)
	p.RPush(ctx, ks.events, op.data...)
	if len(op.set) > 0 {
		p.HSet(ctx, ks.state, op.set...)
	}
	if len(op.del) > 0 {
		p.HDel(ctx, ks.state, op.del...)
	}
	s.touch(ctx, p, ks)
}

// touch restarts the idle expiry of a session's keys, if configured.
func (s *Service) touch(ctx context.Context, p redis.Pipeliner, ks keys) {
	if s.cfg.SessionTTL <= 0 {
		return
	}
	for _, k := range []string{ks.meta, ks.events, ks.state} {
		p.PExpire(ctx, k, s.cfg.SessionTTL)
	}
}

func decodeSession(key session.Key, events []string, state map[string]string) (*session.Session, error) {
	out := &session.Session{Key: key, State: make(map[string]any, len(state)), Events: make([]*session.Event, 0, len(events))}
	for i, raw := range events {
		ev := new(session.Event)
		if err := json.Unmarshal([]byte(raw), ev); err != nil {
			return nil, fmt.Errorf("redissession: decode event %d of %v: %w", i, key, err)
		}
		out.Events = append(out.Events, ev)
	}
	for k, raw := range state {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, fmt.Errorf("redissession: decode state %q of %v: %w", k, key, err)
		}
		out.State[k] = v
	}
	return out, nil
}
