package cooldown

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// After a cooldown ends, the first call, even a successful one, re-opened
// it for another Duration: the window still held failures from before (or
// from the first moments of) the cooldown. With the defaults (window 30s =
// duration 30s) failures recorded in the second after the opening
// (in-flight calls finishing, other workers whose cached status is up to
// CheckInterval old) survived the cooldown; with Duration < Window the
// pre-opening failures themselves did. Now nothing is counted while it is
// open and the window starts afresh when it ends: a success does not
// re-open it, MinCalls fresh failures do.
func TestSuccessAfterCooldownEndsDoesNotReopen(t *testing.T) {
	cases := map[string]struct {
		cfg         Config
		lateFailure time.Duration // when the second batch of failures lands, after the opening
	}{
		"defaults, failures finishing 1s after opening": {Config{}.WithDefaults(), time.Second},
		"duration below window":                         {Config{Window: 30 * time.Second, Duration: 5 * time.Second}.WithDefaults(), 0},
	}
	for name, tc := range cases {
		for _, backend := range []string{"memory", "redis"} {
			t.Run(name+"/"+backend, func(t *testing.T) {
				if err := tc.cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				bs := tc.cfg.bucketSize()
				t0 := time.Unix(0, 0).Add(time.Duration(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()/int64(bs)) * bs).Add(bs - bs/6)
				clock := &fakeClock{t: t0}
				var s Store
				var expire func()
				switch backend {
				case "memory":
					m := NewMemory(tc.cfg)
					m.now = clock.now
					s, expire = m, func() {}
				case "redis":
					c, prefix := redistest.Client(t)
					r := NewRedis(c, prefix, tc.cfg)
					r.now = clock.now
					r.serverNow = clock.now // the script's clock too (Redis's TIME in production)
					// Redis expires the open key on its own clock: end it by hand.
					s, expire = r, func() { c.Del(context.Background(), r.base("m")+":open") }
				}
				ctx := context.Background()
				for range tc.cfg.MinCalls {
					if _, err := s.Record(ctx, "m", true); err != nil {
						t.Fatal(err)
					}
				}
				until, _ := s.Status(ctx, "m")
				if until.IsZero() {
					t.Fatal("cooldown did not open")
				}
				if tc.lateFailure > 0 {
					clock.set(t0.Add(tc.lateFailure))
					for range tc.cfg.MinCalls {
						s.Record(ctx, "m", true)
					}
				}
				// The cooldown ends; the provider has recovered.
				clock.set(t0.Add(tc.cfg.Duration + time.Millisecond))
				expire()
				got, err := s.Record(ctx, "m", false)
				if err != nil {
					t.Fatal(err)
				}
				if !got.IsZero() {
					t.Fatalf("a successful call just after the cooldown ended (+%v) re-opened it until +%v", tc.cfg.Duration+time.Millisecond, got.Sub(t0))
				}
				// Fresh failures after the end still open it again.
				for range tc.cfg.MinCalls {
					got, err = s.Record(ctx, "m", true)
					if err != nil {
						t.Fatal(err)
					}
				}
				if got.IsZero() {
					t.Fatalf("%d failures after the cooldown ended did not open it again", tc.cfg.MinCalls)
				}
			})
		}
	}
}
