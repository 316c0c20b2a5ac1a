package redisstore

import "github.com/redis/go-redis/v9"

// A record is one string key holding a JSON object (encoded by the scripts
// with cjson): key, invocation, agent, tool, state, owner, lease_until,
// args_hash, result (the result's JSON text, as a string), attempts,
// created_at, completed_at; times in Unix milliseconds of the Redis server
// clock, so leases do not depend on worker clocks. A string with SET PX is
// one write per change (a hash would need HSET and PEXPIRE), which matters:
// writes dominate a script's cost. An invocation's index is a set of its
// keys. Each script is one round trip and atomic.

// luaNow is the Redis server time in milliseconds. Since Redis 5 scripts are
// replicated by effects, so TIME is allowed before writes.
const luaNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// luaIndex adds ARGV[idx_key] to the index KEYS[2] and makes the index live
// at least ttl (+ the slack ARGV[idx_slack]) when it would not; extending it
// only when needed keeps most calls free of that write.
const luaIndex = `
local function index(member, ttl, slack)
  redis.call('SADD', KEYS[2], member)
  if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl + slack) end
end
`

// claimScript: KEYS[1] record, KEYS[2] index. ARGV owner, lease_ms,
// margin_ms, args_hash, invocation, agent, tool, key, index_slack_ms.
// Returns {outcome, record JSON}.
var claimScript = redis.NewScript(luaNow + luaIndex + `
local cur = redis.call('GET', KEYS[1])
local rec
if cur then
  rec = cjson.decode(cur)
  if rec.state == 'completed' then return {'completed', cur} end
  if rec.lease_until > now then return {'in_progress', cur} end
  rec.attempts = rec.attempts + 1
else
  rec = {key = ARGV[8], created_at = now, attempts = 1}
end
local lease = tonumber(ARGV[2])
rec.state = 'in_progress'
rec.owner = ARGV[1]
rec.lease_until = now + lease
rec.args_hash = ARGV[4]
rec.invocation = ARGV[5]
rec.agent = ARGV[6]
rec.tool = ARGV[7]
local enc = cjson.encode(rec)
local ttl = lease + tonumber(ARGV[3])
redis.call('SET', KEYS[1], enc, 'PX', ttl)
index(ARGV[8], ttl, tonumber(ARGV[9]))
if cur then return {'reclaimed', enc} end
return {'acquired', enc}
`)

// luaFence decodes the record and checks the owner: returns early with
// {'lost'} when the record is gone, {'not_owner', owner} when another owner
// holds it.
const luaFence = `
local cur = redis.call('GET', KEYS[1])
if not cur then return {'lost'} end
local rec = cjson.decode(cur)
if rec.owner ~= ARGV[1] then return {'not_owner', rec.owner} end
`

// renewScript: KEYS[1] record. ARGV owner, lease_ms, margin_ms. Returns
// {'ok', lease_until}, {'completed', owner} or a fence answer.
var renewScript = redis.NewScript(luaNow + luaFence + `
if rec.state ~= 'in_progress' then return {'completed', rec.owner} end
local lease = tonumber(ARGV[2])
rec.lease_until = now + lease
redis.call('SET', KEYS[1], cjson.encode(rec), 'PX', lease + tonumber(ARGV[3]))
return {'ok', string.format('%.0f', rec.lease_until)}
`)

// completeScript: KEYS[1] record, KEYS[2] index. ARGV owner, result,
// retention_ms, key, index_slack_ms. Returns {'ok'} (also when already
// completed by this owner) or a fence answer.
var completeScript = redis.NewScript(luaNow + luaIndex + luaFence + `
if rec.state == 'completed' then return {'ok'} end
local ret = tonumber(ARGV[3])
rec.state = 'completed'
rec.result = ARGV[2]
rec.completed_at = now
redis.call('SET', KEYS[1], cjson.encode(rec), 'PX', ret)
index(ARGV[4], ret, tonumber(ARGV[5]))
return {'ok'}
`)

// releaseScript: KEYS[1] record, KEYS[2] index. ARGV owner, key. Returns
// {'ok'}, {'completed', owner} or a fence answer.
var releaseScript = redis.NewScript(luaFence + `
if rec.state ~= 'in_progress' then return {'completed', rec.owner} end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
return {'ok'}
`)
