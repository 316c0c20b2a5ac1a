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
// events plus a state hash and a meta hash, changed together by one Lua
// script per append and read in one MULTI/EXEC. It is safe for concurrent
// use.
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

// luaAppend defines appendEvents(events, state, meta, base), the writes of
// an append whose arguments start at ARGV[base]: created_at, the session
// TTL in ms (0: none), then n and n events, m and m state field/value
// pairs, d and d state fields to delete (n > 0). It makes every write on a
// key of its type (or none), or none of them: a key of another type is an
// error reply returned before the first write (the events list needs no
// check: its RPUSH is the first write). It returns nil when it wrote.
// Events go in calls of at most 1000 values (Lua's unpack stops at 8000).
const luaAppend = `
local function chunked(cmd, key, from, to, step)
  local i = from
  while i <= to do
    local j = math.min(i + step - 1, to)
    redis.call(cmd, key, unpack(ARGV, i, j))
    i = j + 1
  end
end
local function appendEvents(events, state, meta, base)
  local n = tonumber(ARGV[base + 2])
  local m = tonumber(ARGV[base + 3 + n])
  local d = tonumber(ARGV[base + 4 + n + 2 * m])
  local want = {[state] = (m + d > 0) and 'hash' or nil, [meta] = 'hash'}
  for _, k in ipairs({state, meta}) do
    local t = want[k] and redis.call('TYPE', k).ok
    if t and t ~= 'none' and t ~= want[k] then
      return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end
  chunked('RPUSH', events, base + 3, base + 2 + n, 1000)
  chunked('HSET', state, base + 4 + n, base + 3 + n + 2 * m, 1000)
  chunked('HDEL', state, base + 5 + n + 2 * m, base + 4 + n + 2 * m + d, 1000)
  redis.call('HSETNX', meta, 'created_at', ARGV[base])
  local ttl = tonumber(ARGV[base + 1])
  if ttl > 0 then
    for _, k in ipairs({events, state, meta}) do redis.call('PEXPIRE', k, ttl) end
  end
  return nil
end
`

// appendScript appends events (appendEvents) once: when the list already
// holds the first of them n places from its end, the script was sent again
// after its reply was lost (event ids are unique), and it writes nothing.
// KEYS[1..3] the session's events, state and meta; ARGV as appendEvents'
// from 1. Returns 1 when it wrote, 0 when the events were there.
var appendScript = redis.NewScript(luaAppend + `
local n = tonumber(ARGV[3])
if redis.call('LINDEX', KEYS[1], -n) == ARGV[4] then return 0 end
local bad = appendEvents(KEYS[1], KEYS[2], KEYS[3], 1)
if bad then return bad end
return 1
`)

// AppendEvents implements session.BatchAppender: one script (appendScript)
// pushes all events and applies their state deltas in order, or, when a
// session key has another type, writes nothing and fails. One command, so
// an auto-pipelining client batches it with other invocations' commands.
// A client that sends it again after a lost reply (go-redis with retries
// on) does not push the events twice: the script recognises them.
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
	ks := s.cfg.sessionKeys(key)
	if err := appendScript.Run(ctx, s.rdb, []string{ks.events, ks.state, ks.meta}, op.args(s.cfg.SessionTTL)...).Err(); err != nil {
		return fmt.Errorf("redissession: append %d event(s) from %s to %v: %w", len(evs), evs[0].ID, key, err)
	}
	return nil
}

// appendOp is an append encoded for appendEvents (see args).
type appendOp struct {
	created string // the first event's time, the session's created_at if new
	data    []any  // the events' JSON
	set     []any  // state keys and JSON values the events set
	del     []string
}

// args returns op as appendEvents' arguments, for a session TTL of ttl.
func (op *appendOp) args(ttl time.Duration) []any {
	args := make([]any, 0, 5+len(op.data)+len(op.set)+len(op.del))
	args = append(args, op.created, ttlMillis(ttl), len(op.data))
	args = append(args, op.data...)
	args = append(args, len(op.set)/2)
	args = append(args, op.set...)
	args = append(args, len(op.del))
	for _, k := range op.del {
		args = append(args, k)
	}
	return args
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

// touch restarts the idle expiry of a session's keys, if configured.
func (s *Service) touch(ctx context.Context, p redis.Pipeliner, ks keys) {
	if s.cfg.SessionTTL <= 0 {
		return
	}
	for _, k := range []string{ks.meta, ks.events, ks.state} {
		p.PExpire(ctx, k, s.cfg.SessionTTL)
	}
}

// ttlMillis is a session TTL as the scripts take it: milliseconds, 0 for
// none.
func ttlMillis(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return ttl.Milliseconds()
}

// decodeSessionReply decodes a script's LRANGE of the events and HGETALL
// of the state (a flat array of field, value) as decodeSession.
func decodeSessionReply(key session.Key, events, state any) (*session.Session, error) {
	evs, ok1 := events.([]any)
	flat, ok2 := state.([]any)
	if !ok1 || !ok2 || len(flat)%2 != 0 {
		return nil, fmt.Errorf("redissession: get or create %v: unexpected reply", key)
	}
	raw := make([]string, len(evs))
	for i, v := range evs {
		if raw[i], ok1 = v.(string); !ok1 {
			return nil, fmt.Errorf("redissession: get or create %v: event %d is not a string", key, i)
		}
	}
	m := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, ok1 := flat[i].(string)
		v, ok2 := flat[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("redissession: get or create %v: state field %d is not a string", key, i/2)
		}
		m[k] = v
	}
	return decodeSession(key, raw, m)
}

func decodeSession(key session.Key, events []string, state map[string]string) (*session.Session, error) {
	out := &session.Session{Key: key, State: make(map[string]any, len(state)), Events: make([]*session.Event, 0, len(events))}
	for i, raw := range events {
		ev := new(session.Event)
		if err := session.DecodeEvent([]byte(raw), ev); err != nil {
			return nil, fmt.Errorf("redissession: decode event %d of %v: %w", i, key, err)
		}
		out.Events = append(out.Events, ev)
	}
	for k, raw := range state {
		var v any
		if err := session.DecodeJSON([]byte(raw), &v); err != nil {
			return nil, fmt.Errorf("redissession: decode state %q of %v: %w", k, key, err)
		}
		out.State[k] = v
	}
	return out, nil
}
