package redissession

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// luaEnter defines enter(), which takes the session lock (as
// acquireScript) and then reads the invocation record, storing the running
// one if there is none: what luaTransition stores on a missing key
// (created_at = updated_at = now, attempts 1, no finished_at), in one HSET
// instead of its read, count and delete. KEYS[1] lock, KEYS[2] record;
// ARGV[1] owner, ARGV[2] lease ms, ARGV[3..9] luaTransition's arguments
// (the status must be running: an error reply, before any write,
// otherwise). The record is read before the lock is written, so a record
// key of another type fails the script with nothing written. Returns {0,
// current owner, remaining ms} when the lock is held, {1, HGETALL} for an
// existing record, {2, {created_at, attempts}} when it stored the running
// record, and so again when the script is sent again after a lost reply:
// owner holds the lock and the record is running with updated_at this
// call's now (ARGV[8]), which only this call's write can have (see
// luaTransition).
const luaEnter = `
local function enter()
  if ARGV[4] ~= 'running' then return redis.error_reply('ERR enter needs a running record') end
  local cur = redis.call('GET', KEYS[1])
  if cur and cur ~= ARGV[1] then
    return {0, cur, redis.call('PTTL', KEYS[1])}
  end
  local rec = redis.call('HGETALL', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if #rec > 0 then
    local f = {}
    for i = 1, #rec, 2 do f[rec[i]] = rec[i + 1] end
    if cur and f.status == 'running' and f.updated_at == ARGV[8] then
      return {2, {f.created_at, f.attempts}} -- stored already by this call, sent again
    end
    return {1, rec}
  end
  redis.call('HSET', KEYS[2], 'id', ARGV[3], 'status', ARGV[4], 'session', ARGV[5],
    'result', ARGV[6], 'error', ARGV[7], 'updated_at', ARGV[8], 'created_at', ARGV[8], 'attempts', 1)
  redis.call('PEXPIRE', KEYS[2], ARGV[9])
  return {2, {ARGV[8], '1'}}
end
`

// enterScript is enter() (see luaEnter); KEYS and ARGV as there.
var enterScript = redis.NewScript(luaEnter + `
return enter()
`)

// enterSessionScript is enter() (see luaEnter) and, when it took the lock,
// the session read of Service.GetOrCreate in the same step: created_at
// (HSETNX), the idle TTL, the events and the state. KEYS[1..2] and
// ARGV[1..9] as enter's, KEYS[3..5] the session's events, state and meta,
// ARGV[10] created_at, ARGV[11] the session TTL in ms (0: none). Returns
// enter's reply, followed, when the lock was taken and the reads worked,
// by the events (LRANGE) and the state (HGETALL): a session key of the
// wrong type leaves them out (redis.pcall), and the lock and record stand
// as enter left them, so the runner's own load reports the problem. One
// script rather than a MULTI with the reads, so an auto-pipelining client
// sends it in its shared batch instead of on a connection of its own.
var enterSessionScript = redis.NewScript(luaEnter + `
local r = enter()
if r.err or r[1] == 0 then return r end
local created = redis.pcall('HSETNX', KEYS[5], 'created_at', ARGV[10])
if type(created) == 'table' and created.err then return r end
local ttl = tonumber(ARGV[11])
if ttl > 0 then
  for _, k in ipairs({KEYS[5], KEYS[3], KEYS[4]}) do redis.call('PEXPIRE', k, ttl) end
end
local events = redis.pcall('LRANGE', KEYS[3], 0, -1)
local state = redis.pcall('HGETALL', KEYS[4])
if events.err or state.err then return r end
r[3], r[4] = events, state
return r
`)

// finishScript stores a record (luaTransition) and releases the session
// lock if ARGV[8] holds it. KEYS[1] record, KEYS[2] lock; ARGV[1..7]
// luaTransition's arguments, ARGV[8] owner. Returns luaTransition's reply.
var finishScript = redis.NewScript(luaTransition + `
-- The lock is read first: a lock key of the wrong type fails the script
-- before the record is written.
local holder = redis.call('GET', KEYS[2])
local r = transition(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
if r.err then return r end -- nothing was written: keep the lock
if holder == ARGV[8] then
  redis.call('DEL', KEYS[2])
end
return r
`)

// Gate is a session.Gate on Redis: Enter (lock, record read, and the
// running record of a new invocation) and Finish (record and release) are
// one Lua script each, so one round trip instead of three and two. It
// works on the keys of a Locker and an Invocations with the same client and
// Config, so it can be mixed with them freely.
//
// The scripts touch a session's lock and an invocation's record, which have
// different hash tags: Gate needs a client of one Redis server (standalone,
// or Sentinel's failover client), not a Cluster or a Ring, which would run
// each script on the node or shard of its first key only; NewGate refuses
// those (use session.NewGate there).
type Gate struct {
	locker *Locker
	invs   *Invocations
}

var (
	_ session.SessionGate = (*Gate)(nil)
	_ session.EventGate   = (*Gate)(nil)
)

// ErrClusterGate is returned by NewGate for a client that does not talk to
// one Redis server: a Cluster client, a Ring, an auto-pipeliner over either,
// or any other implementation of redis.UniversalClient.
var ErrClusterGate = errors.New("redissession: Gate needs a client of one Redis server (standalone or Sentinel), not a Cluster or Ring; use session.NewGate there")

// NewGate returns a Gate on rdb, which must be a *redis.Client (as
// redis.NewClient and redis.NewFailoverClient return) or an auto-pipeliner
// over one; anything else is refused with ErrClusterGate. cfg gets its
// defaults and is validated.
func NewGate(rdb redis.UniversalClient, cfg Config) (*Gate, error) {
	if !oneServer(rdb) {
		return nil, ErrClusterGate
	}
	l, err := NewLocker(rdb, cfg)
	if err != nil {
		return nil, err
	}
	s, err := NewInvocations(rdb, cfg)
	if err != nil {
		return nil, err
	}
	return &Gate{locker: l, invs: s}, nil
}

// Enter implements session.Gate.
func (g *Gate) Enter(ctx context.Context, key session.Key, owner string, lease time.Duration, running *session.Invocation) (*session.Entry, error) {
	keys, args, now, err := g.enterArgs(key, owner, lease, running)
	if err != nil {
		return &session.Entry{}, err
	}
	start := time.Now()
	return g.enterReply(key, owner, lease, running, now, start, enterScript.Run(ctx, g.locker.rdb, keys, args...))
}

// EnterWithSession implements session.SessionGate: one script
// (enterSessionScript) takes the lock and, when it did, reads the session
// as sessions' GetOrCreate would, when sessions is a *Service on the
// gate's client and key prefix (otherwise it is Enter).
func (g *Gate) EnterWithSession(ctx context.Context, key session.Key, owner string, lease time.Duration, running *session.Invocation, sessions session.Service) (*session.Entry, error) {
	svc, ok := sessions.(*Service)
	if !ok || !sameClient(svc.rdb, g.locker.rdb) || svc.cfg.Prefix != g.locker.cfg.Prefix {
		return g.Enter(ctx, key, owner, lease, running)
	}
	keys, args, now, err := g.enterArgs(key, owner, lease, running)
	if err != nil {
		return &session.Entry{}, err
	}
	ks := svc.cfg.sessionKeys(key)
	keys = append(keys, ks.events, ks.state, ks.meta)
	args = append(args, svc.now().UTC().Format(time.RFC3339Nano), ttlMillis(svc.cfg.SessionTTL))
	start := time.Now()
	cmd := enterSessionScript.Run(ctx, g.locker.rdb, keys, args...)
	var reads []any
	if res, err := cmd.Slice(); err == nil && len(res) == 4 {
		// The session's part of the reply: enterReply reads enter's.
		reads = res[2:]
		cmd.SetVal(res[:2])
	}
	e, err := g.enterReply(key, owner, lease, running, now, start, cmd)
	if err == nil && e.Lease != nil && reads != nil {
		if sess, derr := decodeSessionReply(key, reads[0], reads[1]); derr == nil {
			e.Session = sess
		}
	}
	return e, err
}

// oneServer reports whether rdb sends every command to one Redis server: a
// *redis.Client, or an auto-pipeliner over one. An auto-pipeliner does not
// expose its client, but hands Watch to it: a *redis.Client runs a Watch
// with no keys (a transaction on one connection, no command sent), while a
// Cluster client or a Ring (which cannot build an auto-pipeliner) refuses
// it before anything else.
func oneServer(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c != nil
	case *redis.AutoPipeliner:
		if c == nil {
			return false
		}
		ran := false
		err := c.Watch(context.Background(), func(*redis.Tx) error {
			ran = true
			return nil
		})
		return err == nil && ran
	default:
		return false
	}
}

// sameClient reports whether a and b are the same client (an
// implementation that is not comparable is never the same).
func sameClient(a, b redis.UniversalClient) bool {
	if t := reflect.TypeOf(a); t == nil || !t.Comparable() || t != reflect.TypeOf(b) {
		return false
	}
	return a == b
}

func (g *Gate) enterArgs(key session.Key, owner string, lease time.Duration, running *session.Invocation) (keys []string, args []any, now string, err error) {
	if err := session.ValidateLockArgs(key, owner, lease, true); err != nil {
		return nil, nil, "", err
	}
	if running == nil || running.Status != session.InvocationRunning {
		return nil, nil, "", errors.New("redissession: gate: Enter needs a running record")
	}
	targs, now, err := g.invs.transitionArgs(running)
	if err != nil {
		return nil, nil, "", err
	}
	keys = []string{g.locker.cfg.sessionKeys(key).lock, g.invs.cfg.invocationKey(running.ID)}
	return keys, append([]any{owner, leaseMillis(lease)}, targs...), now, nil
}

// enterReply decodes the enter script's reply.
func (g *Gate) enterReply(key session.Key, owner string, lease time.Duration, running *session.Invocation, now string, start time.Time, cmd *redis.Cmd) (*session.Entry, error) {
	res, err := cmd.Slice()
	if err != nil {
		// Whether the lock was taken is unknown: report none held. If it
		// was, it is owner's and expires with the lease unless the caller
		// releases it (the worker does, best effort).
		return &session.Entry{}, fmt.Errorf("redissession: enter %v for invocation %q: %w", key, running.ID, err)
	}
	if len(res) == 0 {
		return &session.Entry{}, fmt.Errorf("redissession: enter %v: empty reply", key)
	}
	code, _ := res[0].(int64)
	if code == 0 {
		if len(res) != 3 {
			return &session.Entry{}, fmt.Errorf("redissession: enter %v: unexpected reply %v", key, res)
		}
		cur, _ := res[1].(string)
		pttl, _ := res[2].(int64)
		return &session.Entry{}, &session.LockedError{Key: key, Owner: cur, Until: time.Now().Add(time.Duration(pttl) * time.Millisecond)}
	}
	e := &session.Entry{Lease: &session.Lease{Key: key, Owner: owner, TTL: lease, Expires: start.Add(lease)}}
	if len(res) != 2 {
		return e, fmt.Errorf("redissession: enter %v: unexpected reply %v", key, res)
	}
	if code == 1 {
		flat, _ := res[1].([]any)
		if e.Existing, err = decodeFlat(flat); err != nil {
			return e, err
		}
		return e, nil
	}
	return e, applyTransitionReply(running, now, []any{int64(1), res[1]})
}

// Finish implements session.Gate. The lock is released whenever the script
// ran, also when the record was already completed; released is false only
// when Redis could not be asked.
func (g *Gate) Finish(ctx context.Context, rec *session.Invocation, key session.Key, owner string) (bool, error) {
	if err := session.ValidateLockArgs(key, owner, 0, false); err != nil {
		return false, err
	}
	args, now, err := g.invs.transitionArgs(rec)
	if err != nil {
		return false, err
	}
	res, err := finishScript.Run(ctx, g.locker.rdb,
		[]string{g.invs.cfg.invocationKey(rec.ID), g.locker.cfg.sessionKeys(key).lock},
		append(args, owner)...).Slice()
	if err != nil {
		return false, fmt.Errorf("redissession: finish invocation %q as %s: %w", rec.ID, rec.Status, err)
	}
	return true, applyTransitionReply(rec, now, res)
}

// finishEventsScript is finishScript for the invocation's last events,
// fenced by the lock. Unless ARGV[8] holds the lock it writes nothing: it
// answers as luaTransition for a completed record, and as the first run
// did for a record this call stored (its status, and updated_at this
// call's now, which only its own write can have: the script sent again
// after a lost reply), so a resent script reads like Finish's; else {-1,
// the current owner, or an empty string for none}. Over a completed record it stores no events, answers as
// luaTransition and releases the lock. Else it appends the events as
// Service.AppendEvents would (in calls of at most 1000 values: Lua's
// unpack stops at 8000), then created_at and the TTLs, stores the record
// and releases the lock. A session key of the wrong type for the writes
// (checked before the first of them, as session.EventGate promises: a
// MULTI of the same writes would push the events and then fail) is an
// error reply with nothing written: the record stays running and the lock
// held, so the redelivery decides from the store. KEYS[1] record, KEYS[2] lock,
// KEYS[3..5] the session's events, state and meta; ARGV[1..7]
// luaTransition's arguments, ARGV[8] owner, ARGV[9] created_at, ARGV[10]
// session TTL ms (0: none), then n and n events, m and m state field/value
// pairs, d and d state fields to delete. With no events the session is not
// touched.
var finishEventsScript = redis.NewScript(luaTransition + luaAppend + `
local cur = redis.call('GET', KEYS[2])
local rec = redis.call('HMGET', KEYS[1], 'status', 'created_at', 'attempts', 'updated_at')
local completed = rec[1] == 'completed'
if cur ~= ARGV[8] then
  if completed then return {0, redis.call('HGETALL', KEYS[1])} end
  if rec[1] == ARGV[2] and rec[4] == ARGV[6] then
    -- this call's own record (updated_at is its now), sent again after a
    -- lost reply: the first run wrote everything; answer as it did
    return {1, {rec[2], rec[3]}}
  end
  return {-1, cur or ''}
end
if completed then
  redis.call('DEL', KEYS[2])
  return {0, redis.call('HGETALL', KEYS[1])}
end
if badAttempts(rec[3]) then
  -- store would refuse it (HINCRBY, or its own check): refuse before any write
  return redis.error_reply(notInteger)
end
if tonumber(ARGV[11]) > 0 then
  local bad = appendEvents(KEYS[3], KEYS[4], KEYS[5], 9)
  if bad then return bad end
end
local r = store(KEYS[1], rec, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
redis.call('DEL', KEYS[2])
return r
`)

// FinishWithEvents implements session.EventGate with one script
// (finishEventsScript) when sessions is a *Service on the gate's client and
// key prefix, also with no events: then it writes only under owner's lock,
// and an invocation found completed gets no more events. A script that
// runs twice (a client that resends it after a lost reply) finds the lock
// released and the record completed, writes nothing and answers as Finish
// does then. With another Service it is Finish (no events) or
// session.AppendThenFinish, which are not fenced by the lock.
func (g *Gate) FinishWithEvents(ctx context.Context, rec *session.Invocation, key session.Key, owner string, sessions session.Service, evs []*session.Event) (bool, error) {
	if err := session.ValidateLockArgs(key, owner, 0, false); err != nil {
		return false, err
	}
	svc, ok := sessions.(*Service)
	if !ok || !sameClient(svc.rdb, g.locker.rdb) || svc.cfg.Prefix != g.locker.cfg.Prefix {
		if len(evs) == 0 {
			return g.Finish(ctx, rec, key, owner)
		}
		return session.AppendThenFinish(ctx, g, sessions, rec, key, owner, evs)
	}
	op, err := svc.encodeAppend(evs)
	if err != nil {
		return false, &session.FinishAppendError{Err: err}
	}
	targs, now, err := g.invs.transitionArgs(rec)
	if err != nil {
		return false, err
	}
	args := append(append(targs, owner), op.args(svc.cfg.SessionTTL)...)
	ks := svc.cfg.sessionKeys(key)
	res, err := finishEventsScript.Run(ctx, g.locker.rdb,
		[]string{g.invs.cfg.invocationKey(rec.ID), ks.lock, ks.events, ks.state, ks.meta}, // svc's prefix is the locker's (checked above)
		args...).Slice()
	if err != nil {
		// Unknown whether it ran: the lock is left to the caller's
		// (fenced) release, and the redelivery decides from the store.
		return false, fmt.Errorf("redissession: finish invocation %q as %s with %d event(s): %w", rec.ID, rec.Status, len(evs), err)
	}
	if len(res) == 0 {
		return false, fmt.Errorf("redissession: finish invocation %q: empty reply", rec.ID)
	}
	if code, _ := res[0].(int64); code == -1 && len(res) == 2 {
		holder, _ := res[1].(string)
		if holder == "" {
			holder = "nobody"
		} else {
			holder = strconv.Quote(holder)
		}
		return true, fmt.Errorf("redissession: finish invocation %q: lock of %v held by %s, nothing written: %w", rec.ID, key, holder, session.ErrNotOwner)
	}
	return true, applyTransitionReply(rec, now, res)
}
