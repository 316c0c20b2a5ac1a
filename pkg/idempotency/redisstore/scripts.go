package redisstore

import "github.com/redis/go-redis/v9"

// A record is one string key holding lines separated by "\n":
//
//	state          in_progress | completed
//	owner          the owner token of the last claim (never contains "\n")
//	attempts       claims that owned the key
//	created_at     Unix ms, the first claimer's clock
//	lease_until    Unix ms, the claimer's (or renewer's) clock, for display
//	meta           JSON: invocation, agent, tool, args_hash (the key is the
//	               Redis key without the prefix)
//	completed_at   Unix ms (completed records only)
//	result         the result's JSON text (completed records only; last, so
//	               it may span lines)
//
// The layout lets the hot scripts work with string prefixes instead of
// decoding and re-encoding JSON (cjson costs more than the Redis commands the
// scripts run): complete and renew check that the record starts with
// "in_progress\n<owner>\n", claim writes a new record with SET NX (outside
// any script on the fast path, see Store.Claim).
//
// Lease decisions use the key's TTL, i.e. the Redis server clock: an
// in-progress record lives lease + margin, so its lease is live while its
// PTTL exceeds the margin. lease_until in the value is only what Claim and
// Effects report; it is computed before the request is sent, so it never
// ends after the lease the server enforces.
//
// An invocation's index is a set of its keys; it must outlive each of its
// records, or Effects would miss an effect whose record still guards it.
//   - Every claim (Store.Claim's pipeline, before its SET NX) makes the index
//     live at least Store.indexTTL (Config.Retention + lease + LeaseMargin +
//     IndexSlack: EXPIRE GT extends a shorter TTL, EXPIRE NX gives one to an
//     index the SADD between them created; a claim with a lease longer
//     than half of IndexSlack extends it once more, since a concurrent claim's
//     EXPIRE NX may have set it from a shorter lease: needsSecondExtend)
//     and adds the key. Every renewal
//     does the same for its new lease (in its script).
//   - Nothing removes a member: Release deletes only the record (Effects
//     skips members without a record), and the index cannot expire before
//     the record's Complete, which can come at most lease + LeaseMargin after
//     the last claim or renewal (Redis deletes the in-progress record then).
//   - So a Complete whose retention is at most Config.Retention writes only
//     the record: the index outlives it by at least IndexSlack. A Complete
//     with a longer retention runs completeExtendScript, which extends the
//     index too.
// So every record, in progress or completed, is listed by Effects for its
// whole life, whatever the order in which claims, releases and completions
// of one invocation interleave. (An index evicted under maxmemory would
// break this, as an evicted record would break idempotency itself: Redis
// must run with maxmemory-policy noeviction, as the README says.)
//
// Each script is one round trip and atomic.

// luaShebang marks the scripts as Redis 7 scripts (not the EVAL
// compatibility mode), which makes each write cheaper; it also means Redis
// 7.0 or later is required.
const luaShebang = "#!lua\n"

// luaIndexTTL puts member in the index KEYS[2] (it is there already unless
// the index was deleted by hand) and makes the index live at least ttl when
// it would not; extending it only when needed keeps most calls free of that
// write.
const luaIndexTTL = `
local function indexTTL(member, ttl)
  redis.call('SADD', KEYS[2], member)
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
`

// claimScript is the slow path of Store.Claim, run when the fast path found
// the key in progress (the fast path has already put the key in its index
// and made the index live long enough). KEYS[1] record. ARGV record (the new
// in-progress record, built by the client), ttl_ms (lease + margin),
// margin_ms. Returns {'acquired'}, {'reclaimed', record},
// {'completed', record} or {'in_progress', record}.
var claimScript = redis.NewScript(luaShebang + `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {'acquired'}
end
local cur = redis.call('GET', KEYS[1])
local state, attempts, created = string.match(cur, '^([%a_]+)\n[^\n]*\n(%d+)\n(%d+)\n')
if state ~= 'in_progress' then return {'completed', cur} end
if redis.call('PTTL', KEYS[1]) > tonumber(ARGV[3]) then return {'in_progress', cur} end
-- Reclaim: the new owner, lease and meta; attempts + 1; the first created_at.
local owner, lease, meta = string.match(ARGV[1], '^[^\n]*\n([^\n]*)\n[^\n]*\n[^\n]*\n([^\n]*)\n(.*)$')
local rec = 'in_progress\n' .. owner .. '\n' .. (tonumber(attempts) + 1) .. '\n' .. created .. '\n' .. lease .. '\n' .. meta
redis.call('SET', KEYS[1], rec, 'PX', ARGV[2])
return {'reclaimed', rec}
`)

// luaFence checks that KEYS[1] is in progress by ARGV[1]: returns early with
// {'lost'} when the record is gone, {'completed'} when this owner completed
// it, {'not_owner', owner} when another owner holds it. Leaves cur.
const luaFence = `
local cur = redis.call('GET', KEYS[1])
if not cur then return {'lost'} end
local hdr = 'in_progress\n' .. ARGV[1] .. '\n'
if string.sub(cur, 1, #hdr) ~= hdr then
  local state, owner = string.match(cur, '^([%a_]+)\n([^\n]*)\n')
  if owner == ARGV[1] then return {'completed'} end
  return {'not_owner', owner or ''}
end
`

// renewScript: KEYS[1] record, KEYS[2] index. ARGV owner, lease_until_ms,
// ttl_ms, key, index_ttl_ms. Returns 'ok', {'completed'} or a fence
// answer.
var renewScript = redis.NewScript(luaShebang + luaIndexTTL + luaFence + `
local head, rest = string.match(cur, '^([^\n]*\n[^\n]*\n[^\n]*\n[^\n]*\n)[^\n]*(\n.*)$')
-- The index first: its writes repeat harmlessly, and an index key of the
-- wrong type fails the script before the record is written.
indexTTL(ARGV[4], tonumber(ARGV[5]))
redis.call('SET', KEYS[1], head .. ARGV[2] .. rest, 'PX', ARGV[3])
return 'ok'
`)

// luaComplete is the fenced write of a completion. ARGV owner,
// completed_ms, result, retention_ms.
const luaComplete = luaFence + luaCompleteWrite

// luaCompleteWrite is luaComplete's write, after luaFence.
const luaCompleteWrite = `
redis.call('SET', KEYS[1], 'completed' .. string.sub(cur, 12) .. '\n' .. ARGV[2] .. '\n' .. ARGV[3], 'PX', ARGV[4])
`

// completeScript: KEYS[1] record. ARGV as luaComplete. Returns 'ok' (a
// plain string: the common answer is the cheapest), {'completed'} (already
// completed by this owner) or a fence answer. For a retention of at most
// Config.Retention, which the index outlives (see above).
var completeScript = redis.NewScript(luaShebang + luaComplete + `
return 'ok'
`)

// completeExtendScript is completeScript for a longer retention: KEYS[2]
// index; ARGV then key, index_ttl_ms. It also makes the index outlive the
// record.
var completeExtendScript = redis.NewScript(luaShebang + luaIndexTTL + luaFence + `
indexTTL(ARGV[5], tonumber(ARGV[6])) -- first, as in renewScript
` + luaCompleteWrite + `
return 'ok'
`)

// releaseScript: KEYS[1] record. ARGV owner. Returns 'ok', {'completed'}
// or a fence answer. The key stays in its index (see above).
var releaseScript = redis.NewScript(luaShebang + luaFence + `
redis.call('DEL', KEYS[1])
return 'ok'
`)
