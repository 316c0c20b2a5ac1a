package cooldown

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

// The script before 44e2a9d: the bucket comes from the worker's clock (ARGV[1]).
var oldRecordScript = redis.NewScript(`
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

// Regression (found in review, twenty-first session): an opening clears
// buckets ahead of Redis's clock (old workers' in a rolling deploy).
// During a rolling deploy, buckets ahead of Redis's clock survive an opening.
//
// Old and new workers share the key names. An old worker still picks the bucket from its own
// clock. If that clock is ahead of Redis's by more than a bucket, the old
// worker's failures land in buckets after the opener's window. Opening
// deletes only b-n+1..b, so they outlive the cooldown. After the cooldown
// ends, one success re-opens it: this is the defect of the clock-skew test, back
// for as long as the deploy lasts. The same happens when Redis's TIME steps
// back, for example after a failover to a replica whose clock is behind. Deleting
// b+1..b+n as well at opening (n more DELs) covers both cases.
func TestOpeningClearsOldWorkersFutureBuckets(t *testing.T) {
	cfg := Config{}.WithDefaults()
	bs := cfg.bucketSize()
	const skew = 4 * time.Second // the old worker's clock, ahead of Redis's
	t0 := time.Unix(0, 0).Add(time.Duration(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()/int64(bs))*bs + bs/2)
	redisClock := &fakeClock{t: t0}
	c, prefix := redistest.Client(t)
	newW := NewRedis(c, prefix, cfg)
	newW.now, newW.serverNow = redisClock.now, redisClock.now
	ctx := context.Background()

	// The old worker: MinCalls-1 failures, one flush each, on its own clock.
	oldNow := t0.Add(skew)
	for range cfg.MinCalls - 1 {
		if err := oldRecordScript.Run(ctx, c, []string{newW.base("m")},
			oldNow.UnixNano()/int64(bs), cfg.Buckets, "1", (cfg.Window + bs).Milliseconds(),
			cfg.MinCalls, cfg.Threshold, cfg.Duration.Milliseconds(), oldNow.UnixMilli(), 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// New workers' failures open the cooldown.
	var until time.Time
	for range cfg.MinCalls {
		var err error
		if until, err = newW.Record(ctx, "m", true); err != nil {
			t.Fatal(err)
		}
	}
	if until.IsZero() {
		t.Fatal("the new worker's failures did not open the cooldown")
	}
	// The cooldown ends; the provider has recovered.
	if err := c.Del(ctx, newW.base("m")+":open").Err(); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(cfg.Duration + time.Millisecond)
	redisClock.set(end)
	got, err := newW.Record(ctx, "m", false)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsZero() {
		t.Fatalf("a success just after the cooldown ended re-opened it for %v: an old worker's failures (its clock %v ahead) from before the cooldown survived it",
			got.Sub(end).Round(time.Second), skew)
	}
}
