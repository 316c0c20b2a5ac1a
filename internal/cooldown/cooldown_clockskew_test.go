package cooldown

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twenty-first session): workers whose clocks
// differ by more than a bucket share one window, so a success just after a
// cooldown ends does not re-open it.
//
// Two workers share the fleet cooldown on Redis; worker A's clock runs 4 s
// ahead of worker B's (a little more than one bucket with the defaults:
// Window 30s / 10 buckets). The Redis store picked the bucket from the
// caller's own clock, so A's failures landed in a bucket that B saw as "the
// future". When B's failures opened the cooldown, the script deleted B's
// window only (b-n+1..b) and A's bucket survived (its TTL is Window +
// bucket, longer than Duration). When the cooldown ended, B's window had
// moved onto A's old bucket: a single successful call re-opened the
// cooldown for another Duration, with failures from before it. That is
// the defect TestSuccessAfterCooldownEndsDoesNotReopen guards against
// ("after it ends the window starts afresh, so only MinCalls new attempts
// can open it again, never a success just after the end", Store.Record),
// back as soon as the fleet's clocks differed by more than a bucket. The
// script now takes the time from Redis. The test runs on Redis's TIME (as
// in production: the workers' clocks move, Redis's does not) and on a
// shared test clock that moves past the cooldown's end as B's does.
func TestClockSkewSuccessAfterCooldownEndsDoesNotReopen(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "redis TIME"
		if shared {
			name = "shared test clock"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{}.WithDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			bs := cfg.bucketSize()
			const skew = 4 * time.Second
			// B's clock sits in the middle of a bucket.
			t0 := time.Unix(0, 0).Add(time.Duration(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()/int64(bs))*bs + bs/2)
			clockA, clockB := &fakeClock{t: t0.Add(skew)}, &fakeClock{t: t0}

			c, prefix := redistest.Client(t)
			a := NewRedis(c, prefix, cfg)
			a.now = clockA.now
			b := NewRedis(c, prefix, cfg)
			b.now = clockB.now
			if shared {
				// Redis's clock, as B's.
				a.serverNow, b.serverNow = clockB.now, clockB.now
			}
			ctx := context.Background()

			// The provider is failing. A (clock ahead) sees MinCalls-1
			// failures: below MinCalls, the window stays closed.
			for range cfg.MinCalls - 1 {
				if until, err := a.Record(ctx, "m", true); err != nil || !until.IsZero() {
					t.Fatalf("A: until=%v err=%v; want closed (below MinCalls)", until, err)
				}
			}
			// B's failures open the fleet cooldown.
			var until time.Time
			for range cfg.MinCalls {
				var err error
				if until, err = b.Record(ctx, "m", true); err != nil {
					t.Fatal(err)
				}
			}
			if until.IsZero() {
				t.Fatal("B's failures did not open the cooldown")
			}

			// The cooldown ends (Redis expires the open key on its own
			// clock: end it by hand) and the provider has recovered.
			if err := c.Del(ctx, b.base("m")+":open").Err(); err != nil {
				t.Fatal(err)
			}
			end := t0.Add(cfg.Duration + time.Millisecond)
			clockB.set(end)
			clockA.set(end.Add(skew))

			got, err := b.Record(ctx, "m", false)
			if err != nil {
				t.Fatal(err)
			}
			if !got.IsZero() {
				t.Fatalf("with workers' clocks %v apart, a successful call just after the cooldown ended re-opened it for %v (failures from before the cooldown survived it)",
					skew, got.Sub(end).Round(time.Second))
			}
		})
	}
}
