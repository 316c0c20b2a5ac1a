package cooldown

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twenty-first session): the success that
// triggers a flush counts even when the held ones are stale.
// A success counted now is dropped with the stale successes it flushes.
//
// The Redis store puts the whole pending batch into the bucket of the
// oldest success it holds. The success that triggers the flush (the first
// one after a pause of at least CheckInterval) joins that batch. When the
// oldest is outside the window (or before a cooldown's end), the fresh success is
// dropped too. Here a worker holds one success from a batch 10 minutes ago.
// The next batch starts with one success, then the provider fails. The
// Memory store (and the Redis store before the change, which counted the
// batch now) opens at the 19th failure: 20 calls in the window, 19 failed.
// The Redis store has lost the fresh success and needs a 20th failure.
func TestFreshSuccessCountsDespiteStaleHeldOnes(t *testing.T) {
	cfg := Config{}.WithDefaults() // window 30s, min calls 20, threshold 0.5, check interval 1s
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	c, prefix := redistest.Client(t)
	r := NewRedis(c, prefix, cfg)
	r.now = clock.now // the script runs on Redis's TIME, as in production
	m := NewMemory(cfg)
	m.now = clock.now
	ctx := context.Background()
	for name, s := range map[string]Store{"memory": m, "redis": r} {
		clock.set(t0)
		if _, err := s.Record(ctx, "m", false); err != nil { // held (Redis), then traffic stops
			t.Fatal(err)
		}
		clock.set(t0.Add(10 * time.Minute))
		if _, err := s.Record(ctx, "m", false); err != nil { // the new batch's first call succeeds
			t.Fatal(err)
		}
		var until time.Time
		for range cfg.MinCalls - 1 {
			var err error
			if until, err = s.Record(ctx, "m", true); err != nil {
				t.Fatal(err)
			}
		}
		if until.IsZero() {
			t.Errorf("%s: 1 fresh success and %d failures within the window (%d calls, %d%% failed) did not open the cooldown: the fresh success was dropped with a success held from 10 minutes earlier",
				name, cfg.MinCalls-1, cfg.MinCalls, 100*(cfg.MinCalls-1)/cfg.MinCalls)
		}
	}
}
