package redissession

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// luaTransition stores an invocation record (a hash) unless it is
// completed, keeping created_at, counting attempts and setting finished_at
// as session.ApplyTransition does. Arguments: record key, id, status,
// session JSON, result, error, now, retention ms. Returns {1, {created_at,
// attempts}} when stored (the caller has the rest: it just sent it), {0,
// HGETALL} when the record is completed.
//
// store is the same after the read: cur is HMGET status, created_at,
// attempts, updated_at of key (a script that has read them already passes
// them). A running record whose updated_at is this call's now (a time in
// nanoseconds, taken once per call) is this call's own write, sent again
// by a client that resends a command whose reply was lost: store answers
// as the first run did and writes nothing, so attempts is counted once. A
// terminal status writes the attempts it read, as the string it is ('0'
// for a record with none), instead of asking Redis for them again with
// HINCRBY by 0; like that HINCRBY it refuses a value that is not an
// integer (badAttempts), with an error reply and before any write, which
// its callers return as they are.
//
// badAttempts is true for an attempts field (a string, or false when the
// field is absent) that HINCRBY would refuse: not a decimal integer without
// leading zeros (at most 18 characters: nothing these scripts write comes
// near that, and every such integer fits HINCRBY's 64 bits). A counted
// attempts value is formatted with %d, not tostring, which writes 1e+15
// from fifteen digits on (Go's Atoi then refused the reply).
const luaTransition = `
local function badAttempts(a)
  return a and not (a == '0' or (#a <= 18 and string.match(a, '^%-?[1-9]%d*$')))
end
local notInteger = 'ERR hash value is not an integer'
local function store(key, cur, id, status, sess, result, err, now, retention)
  if cur[1] == 'completed' then
    return {0, redis.call('HGETALL', key)}
  end
  local created = cur[2] or now
  local attempts
  if status == 'running' then
    if cur[1] == 'running' and cur[4] == now then
      return {1, {created, cur[3]}} -- stored already by this call, sent again
    end
    attempts = string.format('%d', redis.call('HINCRBY', key, 'attempts', 1))
    redis.call('HDEL', key, 'finished_at')
    redis.call('HSET', key, 'id', id, 'status', status, 'session', sess,
      'result', result, 'error', err, 'updated_at', now, 'created_at', created)
  else
    if badAttempts(cur[3]) then return redis.error_reply(notInteger) end
    attempts = cur[3] or '0'
    redis.call('HSET', key, 'id', id, 'status', status, 'session', sess,
      'result', result, 'error', err, 'updated_at', now, 'created_at', created, 'finished_at', now,
      'attempts', attempts)
  end
  redis.call('PEXPIRE', key, retention)
  return {1, {created, attempts}}
end
local function transition(key, id, status, sess, result, err, now, retention)
  return store(key, redis.call('HMGET', key, 'status', 'created_at', 'attempts', 'updated_at'),
    id, status, sess, result, err, now, retention)
end
`

// transitionScript is luaTransition on KEYS[1] with ARGV: id, status,
// session JSON, result, error, now, retention ms.
var transitionScript = redis.NewScript(luaTransition + `
return transition(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
`)

// Invocations is a session.InvocationStore on Redis: one hash per
// invocation, expiring InvocationRetention after its last transition,
// written by a Lua script (atomic, one round trip). It is safe for
// concurrent use.
type Invocations struct {
	rdb redis.UniversalClient
	cfg Config
	now func() time.Time
}

var _ session.InvocationStore = (*Invocations)(nil)

// NewInvocations returns an invocation store on rdb. cfg gets its defaults
// and is validated.
func NewInvocations(rdb redis.UniversalClient, cfg Config) (*Invocations, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Invocations{rdb: rdb, cfg: cfg, now: time.Now}, nil
}

// Get implements session.InvocationStore.
func (s *Invocations) Get(ctx context.Context, id string) (*session.Invocation, error) {
	m, err := s.rdb.HGetAll(ctx, s.cfg.invocationKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("redissession: get invocation %q: %w", id, err)
	}
	if len(m) == 0 {
		return nil, session.ErrInvocationNotFound
	}
	return decodeInvocation(m)
}

// Transition implements session.InvocationStore. It returns after Redis
// replied to the script.
func (s *Invocations) Transition(ctx context.Context, rec *session.Invocation) error {
	args, now, err := s.transitionArgs(rec)
	if err != nil {
		return err
	}
	res, err := transitionScript.Run(ctx, s.rdb, []string{s.cfg.invocationKey(rec.ID)}, args...).Slice()
	if err != nil {
		return fmt.Errorf("redissession: transition invocation %q to %s: %w", rec.ID, rec.Status, err)
	}
	return applyTransitionReply(rec, now, res)
}

// transitionArgs checks rec (session.PrepareTransition) and returns
// luaTransition's arguments after the key, and the "now" among them.
func (s *Invocations) transitionArgs(rec *session.Invocation) ([]any, string, error) {
	if err := session.PrepareTransition(rec); err != nil {
		return nil, "", err
	}
	sk, err := json.Marshal(rec.Session)
	if err != nil {
		return nil, "", fmt.Errorf("redissession: encode invocation %q session: %w", rec.ID, err)
	}
	now := s.now().UTC().Format(time.RFC3339Nano)
	return []any{rec.ID, string(rec.Status), sk, []byte(rec.Result), rec.Error, now,
		leaseMillis(s.cfg.InvocationRetention)}, now, nil
}

// applyTransitionReply reads luaTransition's reply into rec, or returns the
// *session.InvocationCompletedError it says.
func applyTransitionReply(rec *session.Invocation, now string, res []any) error {
	if len(res) != 2 {
		return fmt.Errorf("redissession: transition invocation %q: unexpected reply %v", rec.ID, res)
	}
	flat, _ := res[1].([]any)
	if ok, _ := res[0].(int64); ok != 1 {
		stored, err := decodeFlat(flat)
		if err != nil {
			return err
		}
		return &session.InvocationCompletedError{Current: stored}
	}
	if len(flat) != 2 {
		return fmt.Errorf("redissession: transition invocation %q: unexpected reply %v", rec.ID, res)
	}
	created, _ := flat[0].(string)
	attempts, _ := flat[1].(string)
	// What the script stored: rec as sent, plus the kept created_at, the
	// counted attempts and the times.
	out := *rec
	out.Result = nil
	if len(rec.Result) > 0 {
		out.Result = rec.Result
	}
	var err error
	if out.CreatedAt, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return fmt.Errorf("redissession: transition invocation %q: created_at: %w", rec.ID, err)
	}
	if out.Attempts, err = strconv.Atoi(attempts); err != nil {
		return fmt.Errorf("redissession: transition invocation %q: attempts: %w", rec.ID, err)
	}
	out.UpdatedAt, _ = time.Parse(time.RFC3339Nano, now)
	out.FinishedAt = time.Time{}
	if rec.Status != session.InvocationRunning {
		out.FinishedAt = out.UpdatedAt
	}
	*rec = out
	return nil
}

// decodeFlat decodes an HGETALL reply given as a flat list.
func decodeFlat(flat []any) (*session.Invocation, error) {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		m[k] = v
	}
	return decodeInvocation(m)
}

func decodeInvocation(m map[string]string) (*session.Invocation, error) {
	rec := &session.Invocation{
		ID:     m["id"],
		Status: session.InvocationStatus(m["status"]),
		Error:  m["error"],
	}
	if r := m["result"]; r != "" {
		rec.Result = json.RawMessage(r)
	}
	if s := m["session"]; s != "" {
		if err := json.Unmarshal([]byte(s), &rec.Session); err != nil {
			return nil, fmt.Errorf("redissession: decode invocation %q session: %w", rec.ID, err)
		}
	}
	var err error
	if a := m["attempts"]; a != "" {
		if rec.Attempts, err = strconv.Atoi(a); err != nil {
			return nil, fmt.Errorf("redissession: decode invocation %q attempts: %w", rec.ID, err)
		}
	}
	for field, dst := range map[string]*time.Time{
		"created_at": &rec.CreatedAt, "updated_at": &rec.UpdatedAt, "finished_at": &rec.FinishedAt,
	} {
		if v := m[field]; v != "" {
			if *dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return nil, fmt.Errorf("redissession: decode invocation %q %s: %w", rec.ID, field, err)
			}
		}
	}
	return rec, nil
}
