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
// completed records, or Effects would miss an effect whose record still
// guards it.
//   - A claim's fast path adds the key and, when it creates the index, gives
//     it Store.indexTTL (Config.Retention + lease + LeaseMargin + IndexSlack).
//     These plain commands are not atomic with the claim's SET NX.
//   - The complete script adds the key again and makes the index live at
//     least retention + IndexSlack (usually one SADD that changes nothing
//     and one PTTL). Renewals and reclaims (scripts) do the same with
//     Store.indexTTL. No operation shortens an index's TTL.
// So a completed record is always in an index that outlives it, whatever
// happened between its claim and its completion (the index expiring, a
// previous owner's Release removing the key). An in-progress record can be
// missing from the index for a while: when its claim came long after the
// invocation's last write (a replay weeks later) and the index expired
// before the record, or when a stale owner's Release ran between the
// claim's SADD and SET NX. Its complete, renewal or reclaim puts it back;
// if the worker died instead, Effects misses that in-progress record until
// it expires (lease + LeaseMargin). The fast path leaves that open to keep
// the hot path at three plain commands (each more cost about 3 % of the
// claim+complete rate here). Each script is one round trip and atomic.

// luaShebang marks the scripts as Redis 7 scripts (not the EVAL
// compatibility mode), which makes each write cheaper; it also means Redis
// 7.0 or later is required.
const luaShebang = "#!lua\n"

// luaIndexTTL puts member in the index KEYS[2] (again: the claim's SADD
// may have gone to an index that expired since, or a Release of the
// previous owner may have removed it) and makes the index live at least
// ttl when it would not; extending it only when needed keeps most calls
// free of that write.
const luaIndexTTL = `
local function indexTTL(member, ttl)
  redis.call('SADD', KEYS[2], member)
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
`

// claimScript is the slow path of Store.Claim, run when the fast path found
// the key in progress. KEYS[1] record, KEYS[2] index. ARGV record (the new
// in-progress record, built by the client), ttl_ms (lease + margin),
// margin_ms, key, index_ttl_ms. Returns {'acquired'},
// {'reclaimed', record}, {'completed', record} or {'in_progress', record}.
var claimScript = redis.NewScript(luaShebang + luaIndexTTL + `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SADD', KEYS[2], ARGV[4])
  indexTTL(ARGV[4], tonumber(ARGV[5]))
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
redis.call('SADD', KEYS[2], ARGV[4])
indexTTL(ARGV[4], tonumber(ARGV[5]))
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
redis.call('SET', KEYS[1], head .. ARGV[2] .. rest, 'PX', ARGV[3])
indexTTL(ARGV[4], tonumber(ARGV[5]))
return 'ok'
`)

// completeScript: KEYS[1] record, KEYS[2] index. ARGV owner, completed_ms,
// result, retention_ms, key, index_ttl_ms. Returns 'ok' (a plain string:
// the common answer is the cheapest), {'completed'} (already completed by
// this owner) or a fence answer.
var completeScript = redis.NewScript(luaShebang + luaIndexTTL + luaFence + `
redis.call('SET', KEYS[1], 'completed' .. string.sub(cur, 12) .. '\n' .. ARGV[2] .. '\n' .. ARGV[3], 'PX', ARGV[4])
indexTTL(ARGV[5], tonumber(ARGV[6]))
return 'ok'
`)

// releaseScript: KEYS[1] record, KEYS[2] index. ARGV owner, key. Returns
// 'ok', {'completed'} or a fence answer.
var releaseScript = redis.NewScript(luaShebang + luaFence + `
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return 'ok'
`)
