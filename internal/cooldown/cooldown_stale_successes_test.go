package cooldown

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/redistest"
)

// Regression (found in review, twenty-first session): successes a worker
// held back long ago do not dilute a fresh outage's window.
//
// The Redis store keeps successes locally and flushes them at most once
// per CheckInterval, or with the next failure. Successes still pending
// when traffic stops (a batch ends: up to one CheckInterval of a worker's
// successes) were flushed with the next failure however long after, into
// that failure's bucket: calls from ten minutes ago counted as calls of the
// current window. When the provider then turned out to be down, MinCalls
// failures within the window (all the window holds) did not open the
// cooldown: the stale successes diluted them, for as long as the window
// kept that bucket (up to Window). Each worker adds its own pending
// successes, so on a fleet the dilution was CheckInterval x rate x workers.
// The Memory store, on the same sequence, opens at MinCalls failures; the
// Store contract counts "the window's failure share". Pending successes now
// go into the bucket of the time they were counted, and not at all when it
// is outside the window. (The worker's clock moves here, Redis's does not:
// the age of pending successes is the worker's to measure.)
func TestStaleLocalSuccessesDiluteTheWindow(t *testing.T) {
	cfg := Config{}.WithDefaults() // window 30s, min calls 20, threshold 0.5, check interval 1s
	const pendingSuccesses = 30    // one worker's successes in its last check interval before traffic stopped
	// (NewMemory(cfg) with the same clock and calls opens at the 20th failure.)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	c, prefix := redistest.Client(t)
	s := NewRedis(c, prefix, cfg)
	s.now = clock.now
	ctx := context.Background()
	for range pendingSuccesses {
		if _, err := s.Record(ctx, "m", false); err != nil {
			t.Fatal(err)
		}
	}
	// Ten minutes later the provider is down: MinCalls failures in a row,
	// and nothing else within the window.
	clock.set(t0.Add(10 * time.Minute))
	var until time.Time
	for range cfg.MinCalls {
		var err error
		if until, err = s.Record(ctx, "m", true); err != nil {
			t.Fatal(err)
		}
	}
	if until.IsZero() {
		t.Fatalf("%d failures and nothing else in the last %v did not open the cooldown: %d successes from 10 minutes earlier were counted in the window",
			cfg.MinCalls, cfg.Window, pendingSuccesses)
	}
}

// Regression (found in review, twenty-first session): successes a worker
// still held when another worker opened the cooldown do not count towards
// the fresh window after it ends.
//
// Opening a cooldown empties the window ("after it ends the window starts
// afresh", Store.Record), but successes pending on another worker were
// flushed after the end into a bucket the window still covered (Duration
// below Window): with more of them than MinCalls, MinCalls fresh failures
// no longer opened it, and with fewer they made up the MinCalls. The
// cooldown's end is now kept in Redis, and pending successes counted
// before it are not added.
func TestSuccessesPendingFromBeforeACooldownDoNotCountAfterIt(t *testing.T) {
	cfg := Config{Duration: 5 * time.Second}.WithDefaults() // window 30s, min calls 20, threshold 0.5
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	c, prefix := redistest.Client(t)
	a, b := NewRedis(c, prefix, cfg), NewRedis(c, prefix, cfg)
	for _, s := range []*Redis{a, b} {
		s.now, s.serverNow = clock.now, clock.now
	}
	ctx := context.Background()
	// A counts successes and holds them (within its CheckInterval).
	for range 30 {
		if _, err := a.Record(ctx, "m", false); err != nil {
			t.Fatal(err)
		}
	}
	// The provider goes down; B's failures open the cooldown.
	clock.set(t0.Add(100 * time.Millisecond))
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
	// The cooldown ends (by hand: Redis expires the key on its own clock);
	// the provider is still down, and A's calls fail.
	clock.set(t0.Add(100*time.Millisecond + cfg.Duration + 100*time.Millisecond))
	if err := c.Del(ctx, a.base("m")+":open").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.MinCalls {
		got, err := a.Record(ctx, "m", true)
		if err != nil {
			t.Fatal(err)
		}
		if opened := !got.IsZero(); opened != (i == cfg.MinCalls-1) {
			t.Fatalf("after the cooldown, failure %d: open=%v; want it to open at the %dth fresh failure, as the window starts afresh", i+1, opened, cfg.MinCalls)
		}
	}
}

// Successes pending for less than the window still count, in the bucket of
// the time they were counted: the fix for stale ones must not drop them
// all. The Memory store, on the same calls, does not open either.
func TestPendingSuccessesWithinTheWindowStillCount(t *testing.T) {
	cfg := Config{}.WithDefaults() // window 30s, min calls 20, threshold 0.5, check interval 1s
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	c, prefix := redistest.Client(t)
	r := NewRedis(c, prefix, cfg)
	r.now, r.serverNow = clock.now, clock.now
	m := NewMemory(cfg)
	m.now = clock.now
	ctx := context.Background()
	for _, s := range []Store{r, m} {
		for range 30 {
			if _, err := s.Record(ctx, "m", false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Ten seconds later (a few buckets on, within the window): 20
	// failures against 30 successes stay below the threshold.
	clock.set(t0.Add(10 * time.Second))
	for name, s := range map[string]Store{"redis": r, "memory": m} {
		for i := range cfg.MinCalls {
			if got, err := s.Record(ctx, "m", true); err != nil || !got.IsZero() {
				t.Fatalf("%s: failure %d: until=%v err=%v; want closed (%d of %d calls failed)", name, i+1, got, err, i+1, 31+i)
			}
		}
	}
}
