package replayer

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Execute documents "Concurrency at a time and at most Rate replays per
// second" (and the runbook: "goes on with the rest at --rate"). With
// --rate 2 and --concurrency 8, six replays take about 2.5 s. The limiter's
// burst was the concurrency, so the first eight replays went out at once,
// whatever the rate: a recovering provider got concurrency-sized bursts at
// every run's (and every drain pass's) start. (An upper bound on what one
// second holds: a slow machine cannot make it fail.)
func TestRateHoldsFromTheFirstReplay(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n, perSec = 6, 2.0
	x.seed("rate", n, "SERVER", 0)
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	var mu sync.Mutex
	var at []time.Time
	err := Execute(ctx, f, plan, ExecOptions{Rate: perSec, Concurrency: 8, afterPublish: func(Planned) error {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != n {
		t.Fatalf("%d replays published, want %d", len(at), n)
	}
	// In the first second at most rate replays (one more for clock slack).
	inFirst := 0
	for _, ts := range at {
		if ts.Sub(at[0]) < time.Second {
			inFirst++
		}
	}
	if inFirst > int(perSec)+1 {
		t.Fatalf("%d replays published within the first second at --rate %.0f (all %d took %v)",
			inFirst, perSec, n, at[len(at)-1].Sub(at[0]))
	}
}
