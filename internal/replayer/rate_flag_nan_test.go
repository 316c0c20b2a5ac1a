package replayer

import (
	"context"
	"testing"
	"time"
)

// Regression (found in review, nineteenth session): The nineteenth session refused NaN and ±Inf in every float key of the
// replayer's configuration (config.nonFinite: "a NaN rate read as
// unthrottled"), but the same rate reaches the engine through the --rate
// flag of `replay` and `drain`, which bypasses Replayer.Validate and is
// checked only with `o.rate < 0` / `rateV < 0`: NaN passes both, and
// engine.go's `if opts.Rate > 0` then leaves the replay unthrottled
// (rate.Inf), exactly the silent failure the fix was for (a typo'd
// `--rate nan` floods the fleet at full speed). Correct: --rate NaN is a
// usage error (exit 3), like --rate -1, before anything connects.
func TestReplayRateFlagNaNIsUsageError(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"replay", "--dry-run", "--rate", "NaN"},
		// drain pointed at a NATS URL nobody listens on: with the flag
		// refused it exits 3 before connecting, else it fails to connect (1).
		{"drain", "--nats-url", "nats://127.0.0.1:1", "--rate", "NaN"},
	} {
		if r := x.run(ctx, nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (usage: a NaN or infinite rate, like a negative one)\nstderr: %s", args, r.code, ExitUsage, r.stderr)
		}
	}
}
