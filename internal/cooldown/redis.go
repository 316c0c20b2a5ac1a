package cooldown

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the fleet-wide Store. Each Record is one round trip (a Lua
// script): it bumps the attempt and failure counters of the current bucket,
// sums the window, and opens the cooldown with SET NX PX when the share
// crosses the threshold. Keys: <prefix>cooldown:<model>:{c,f}:<bucket> and
// <prefix>cooldown:<model>:open; nothing scans the keyspace.
type Redis struct {
	c      redis.UniversalClient
	prefix string
	cfg    Config
	now    func() time.Time
}

// NewRedis returns a Redis store using keys under prefix.
func NewRedis(c redis.UniversalClient, prefix string, cfg Config) *Redis {
	return &Redis{c: c, prefix: prefix, cfg: cfg.WithDefaults(), now: time.Now}
}

// KEYS[1] = key base; ARGV: bucket, buckets, transient(0/1), bucket ttl ms,
// min calls, threshold, duration ms, now ms.
var recordScript = redis.NewScript(`
local base = KEYS[1]
local b = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local ttl = tonumber(ARGV[4])
redis.call('INCR', base .. ':c:' .. b)
redis.call('PEXPIRE', base .. ':c:' .. b, ttl)
if ARGV[3] == '1' then
  redis.call('INCR', base .. ':f:' .. b)
  redis.call('PEXPIRE', base .. ':f:' .. b, ttl)
end
local open = redis.call('PTTL', base .. ':open')
if open > 0 then return open end
local calls, fails = 0, 0
for i = b - n + 1, b do
  calls = calls + tonumber(redis.call('GET', base .. ':c:' .. i) or '0')
  fails = fails + tonumber(redis.call('GET', base .. ':f:' .. i) or '0')
end
if calls >= tonumber(ARGV[5]) and fails >= tonumber(ARGV[6]) * calls then
  redis.call('SET', base .. ':open', ARGV[8], 'PX', ARGV[7], 'NX')
  return tonumber(ARGV[7])
end
return 0
`)

func (r *Redis) base(model string) string {
	return r.prefix + "cooldown:" + strings.NewReplacer(":", "_", " ", "_").Replace(model)
}

// Record implements Store.
func (r *Redis) Record(ctx context.Context, model string, transient bool) (time.Time, error) {
	now := r.now()
	bs := r.cfg.bucketSize()
	t := "0"
	if transient {
		t = "1"
	}
	ms, err := recordScript.Run(ctx, r.c, []string{r.base(model)},
		now.UnixNano()/int64(bs), r.cfg.Buckets, t, (r.cfg.Window + bs).Milliseconds(),
		r.cfg.MinCalls, r.cfg.Threshold, r.cfg.Duration.Milliseconds(), now.UnixMilli()).Int64()
	if err != nil {
		return time.Time{}, fmt.Errorf("cooldown: record %s: %w", model, err)
	}
	if ms <= 0 {
		return time.Time{}, nil
	}
	return now.Add(time.Duration(ms) * time.Millisecond), nil
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
