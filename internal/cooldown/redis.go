package cooldown

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the fleet-wide Store. A flush is one round trip (a Lua script):
// it bumps the attempt and failure counters of the current bucket, sums the
// window, and opens the cooldown with SET NX PX when the share crosses the
// threshold. A failure is flushed at once, together with the successes
// counted locally since the last flush; successes alone are flushed at most
// once per CheckInterval (the staleness the decorator already accepts for
// "is it open?"), so a healthy model costs no round trip per call.
//
// The buckets follow one clock, Redis's (TIME inside the script), never a
// worker's: workers whose clocks differ by more than a bucket put their
// failures in buckets the opener's window did not cover, and those outlived
// the cooldown (found in review, twenty-first session). The worker's clock
// only measures how old its pending successes are; they go into the bucket
// of the time they were first counted, and not at all when that is outside
// the window or before the end of the last cooldown (the end is kept in
// <base>:end for a window after it). Keys:
// <prefix>cooldown:<model>:{c,f}:<bucket>, <prefix>cooldown:<model>:open and
// <prefix>cooldown:<model>:end (the model name escaped, modelKeyEscaper);
// nothing scans the keyspace.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	cfg    Config
	now    func() time.Time // the worker's clock: CheckInterval, pending successes' age, until
	// serverNow, when set, is the script's clock instead of Redis's TIME
	// (tests only: they move it by hand). Production leaves it nil.
	serverNow func() time.Time

	mu      sync.Mutex
	pending map[string]*pendingCalls // model → successes not yet flushed
}

// pendingCalls are a model's successes counted since the last flush.
type pendingCalls struct {
	n       int64
	first   time.Time // when the oldest of the n successes was counted
	flushed time.Time // last flush (or first call)
	until   time.Time // the open-until the last flush returned
}

// NewRedis returns a Redis store using keys under prefix.
func NewRedis(c redis.UniversalClient, prefix string, cfg Config) *Redis {
	return &Redis{c: c, prefix: prefix, cfg: cfg.WithDefaults(), now: time.Now, pending: map[string]*pendingCalls{}}
}

// KEYS[1] = key base; ARGV: buckets, bucket size µs, transient (0/1),
// bucket ttl ms, min calls, threshold, duration ms, successes to add,
// their age µs, the time in µs or "" for Redis's TIME (tests only).
// While the cooldown is open nothing is counted; opening it deletes the
// window's buckets and keeps the cooldown's end in :end, so the window
// starts afresh when it ends (Store.Record): successes counted before the
// end are not added after it. TIME in a script needs effects replication,
// the only kind since Redis 7.0 (the default since 5.0).
var recordScript = redis.NewScript(`
local base = KEYS[1]
local open = redis.call('PTTL', base .. ':open')
if open > 0 then return open end
local now = tonumber(ARGV[10])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local n = tonumber(ARGV[1])
local bs = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
local b = math.floor(now / bs)
local function add(kind, i, k)
  local key = base .. ':' .. kind .. ':' .. i
  redis.call('INCRBY', key, k)
  redis.call('PEXPIRE', key, ttl)
end
if ARGV[3] == '1' then
  add('c', b, 1)
  add('f', b, 1)
end
local fresh = tonumber(ARGV[11])
if fresh > 0 then add('c', b, fresh) end
local s = tonumber(ARGV[8])
if s > 0 then
  local at = now - tonumber(ARGV[9])
  local sb = math.floor(at / bs)
  if sb > b - n and at >= tonumber(redis.call('GET', base .. ':end') or '0') then
    add('c', sb, s)
  end
end
local calls, fails = 0, 0
for i = b - n + 1, b do
  calls = calls + tonumber(redis.call('GET', base .. ':c:' .. i) or '0')
  fails = fails + tonumber(redis.call('GET', base .. ':f:' .. i) or '0')
end
if calls >= tonumber(ARGV[5]) and fails >= tonumber(ARGV[6]) * calls then
  local d = tonumber(ARGV[7])
  redis.call('SET', base .. ':open', string.format('%d', math.floor(now / 1000)), 'PX', d, 'NX')
  redis.call('SET', base .. ':end', string.format('%d', now + d * 1000), 'PX', d + ttl)
  for i = b - n + 1, b + n do
    redis.call('DEL', base .. ':c:' .. i, base .. ':f:' .. i)
  end
  return d
end
return 0
`)

func (r *Redis) base(model string) string {
	return r.prefix + "cooldown:" + modelKeyEscaper.Replace(model)
}

// modelKeyEscaper makes a model name one key segment: it escapes the key
// separator, white space and a cluster hash tag's braces, and the escape
// character itself, so that two names never share a key. It used to turn
// ":" and " " into "_", and "sim:support" shared its cooldown with
// "sim_support" (found in review, seventeenth session). A name without
// these characters keeps its key.
var modelKeyEscaper = strings.NewReplacer("%", "%25", ":", "%3A", " ", "%20", "{", "%7B", "}", "%7D")

// Record implements Store.
func (r *Redis) Record(ctx context.Context, model string, transient bool) (time.Time, error) {
	now := r.now()
	r.mu.Lock()
	p := r.pending[model]
	if p == nil {
		p = &pendingCalls{flushed: now}
		r.pending[model] = p
	}
	if !transient {
		if p.n == 0 {
			p.first = now
		}
		p.n++
		if now.Sub(p.flushed) < r.cfg.CheckInterval {
			until := p.until
			r.mu.Unlock()
			if now.Before(until) {
				return until, nil
			}
			return time.Time{}, nil
		}
	}
	successes, age := p.n, now.Sub(p.first)
	fresh := int64(0)
	if !transient {
		// The success that triggers this flush is counted now, in the
		// current bucket, not with the held ones (found in review,
		// twenty-first session: it was dropped with stale ones).
		successes, fresh = successes-1, 1
	}
	p.n, p.flushed = 0, now
	r.mu.Unlock()
	if successes == 0 || age < 0 {
		age = 0
	}

	bs := max(r.cfg.bucketSize().Microseconds(), 1) // a zero size would loop the script forever
	t := "0"
	if transient {
		t = "1"
	}
	at := ""
	if r.serverNow != nil {
		at = strconv.FormatInt(r.serverNow().UnixMicro(), 10)
	}
	ms, err := recordScript.Run(ctx, r.c, []string{r.base(model)},
		r.cfg.Buckets, bs, t, (r.cfg.Window + r.cfg.bucketSize()).Milliseconds(),
		r.cfg.MinCalls, r.cfg.Threshold, r.cfg.Duration.Milliseconds(), successes, age.Microseconds(), at, fresh).Int64()
	if err != nil {
		// The successes are not put back for the next flush: the script
		// may have run and only its reply been lost, and then they would
		// count twice. Successes only dilute the failure share, so the
		// safe side for a breaker is to lose a few (it may open a little
		// sooner) rather than count them twice (it opens later in an
		// outage, fleet-wide).
		return time.Time{}, fmt.Errorf("cooldown: record %s: %w", model, err)
	}
	var until time.Time
	if ms > 0 {
		until = now.Add(time.Duration(ms) * time.Millisecond)
	}
	r.mu.Lock()
	p.until = until
	r.mu.Unlock()
	return until, nil
}

// Status implements Store. The open key's remaining time is Redis's; the
// end returned is on the worker's clock, like Record's.
func (r *Redis) Status(ctx context.Context, model string) (time.Time, error) {
	d, err := r.c.PTTL(ctx, r.base(model)+":open").Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("cooldown: status %s: %w", model, err)
	}
	if d <= 0 {
		return time.Time{}, nil
	}
	return r.now().Add(d), nil
}
