package replayer

import (
	"context"
	"testing"
	"time"
)

// Regression (found in review, twenty-fifth session): --rate refused NaN
// and negative values but took +Inf, which the engine runs unthrottled,
// while the configuration's rate keys refuse it. An infinite --rate is a
// usage error (exit 3) before anything connects, as NaN is.
func TestReplayRateFlagInfIsUsageError(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"replay", "--dry-run", "--rate", "+Inf"},
		{"replay", "--dry-run", "--rate", "inf"},
		{"drain", "--nats-url", "nats://127.0.0.1:1", "--rate", "Inf"},
	} {
		if r := x.run(ctx, nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage: an infinite rate)\nstderr: %s", args, r.code, ExitUsage, r.stderr)
		}
	}
}
