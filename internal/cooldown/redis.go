package cooldown

import (
	"context"
	"fmt"
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
// "is it open?"), so a healthy model costs no round trip per call. Keys:
// <prefix>cooldown:<model>:{c,f}:<bucket> and <prefix>cooldown:<model>:open
// (the model name escaped, modelKeyEscaper);
// nothing scans the keyspace.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	cfg    Config
	now    func() time.Time

	mu      sync.Mutex
	pending map[string]*pendingCalls // model → successes not yet flushed
}

// pendingCalls are a model's successes counted since the last flush.
type pendingCalls struct {
	n       int64
	flushed time.Time // last flush (or first success)
	until   time.Time // the open-until the last flush returned
}

// NewRedis returns a Redis store using keys under prefix.
func NewRedis(c redis.UniversalClient, prefix string, cfg Config) *Redis {
	return &Redis{c: c, prefix: prefix, cfg: cfg.WithDefaults(), now: time.Now, pending: map[string]*pendingCalls{}}
}

// KEYS[1] = key base; ARGV: bucket, buckets, transient(0/1), bucket ttl ms,
// min calls, threshold, duration ms, now ms, attempts to add (>= 1).
// While the cooldown is open nothing is counted; opening it deletes the
// window's buckets, so the window starts afresh when it ends (Store.Record).
var recordScript = redis.NewScript(`
local base = KEYS[1]
local open = redis.call('PTTL', base .. ':open')
if open > 0 then return open end
local b = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
redis.call('INCRBY', base .. ':c:' .. b, ARGV[9])
redis.call('PEXPIRE', base .. ':c:' .. b, ttl)
if ARGV[3] == '1' then
  redis.call('INCR', base .. ':f:' .. b)
  redis.call('PEXPIRE', base .. ':f:' .. b, ttl)
end
local calls, fails = 0, 0
for i = b - n + 1, b do
  calls = calls + tonumber(redis.call('GET', base .. ':c:' .. i) or '0')
  fails = fails + tonumber(redis.call('GET', base .. ':f:' .. i) or '0')
end
if calls >= tonumber(ARGV[5]) and fails >= tonumber(ARGV[6]) * calls then
  redis.call('SET', base .. ':open', ARGV[8], 'PX', ARGV[7], 'NX')
  for i = b - n + 1, b do
    redis.call('DEL', base .. ':c:' .. i, base .. ':f:' .. i)
  end
  return tonumber(ARGV[7])
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
	successes := p.n
	p.n, p.flushed = 0, now
	r.mu.Unlock()

	bs := r.cfg.bucketSize()
	t, calls := "0", successes
	if transient {
		t, calls = "1", calls+1
	}
	ms, err := recordScript.Run(ctx, r.c, []string{r.base(model)},
		now.UnixNano()/int64(bs), r.cfg.Buckets, t, (r.cfg.Window + bs).Milliseconds(),
		r.cfg.MinCalls, r.cfg.Threshold, r.cfg.Duration.Milliseconds(), now.UnixMilli(), calls).Int64()
	var until time.Time
	if err == nil && ms > 0 {
		until = now.Add(time.Duration(ms) * time.Millisecond)
	}
	r.mu.Lock()
	if err != nil {
		p.n += successes // not lost: the next flush carries them
	} else {
		p.until = until
	}
	r.mu.Unlock()
	if err != nil {
		return time.Time{}, fmt.Errorf("cooldown: record %s: %w", model, err)
	}
	return until, nil
}

// Status implements Store.
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
