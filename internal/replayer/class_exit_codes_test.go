package replayer

import (
	"context"
	"strings"
	"testing"
)

// runNoFleet runs the CLI with NATS pointing nowhere (nothing listens on
// port 1): a check that needs no server must still decide.
func runNoFleet(t *testing.T, args ...string) runOut {
	t.Helper()
	env := map[string]string{"AGENTFLEET_NATS_URL": "nats://127.0.0.1:1"}
	var out, errb syncBuf
	code := Run(context.Background(), args, Env{Stdout: &out, Stderr: &errb, Lookup: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	return runOut{code, out.String(), errb.String()}
}

// Regression (found in review of this session's fix, twenty-second
// session): `replay --force` without --class is a usage error that needs
// no server: before 7a75ac0 it was refused up front (exit 3). The new guard
// `checkSelection(sel) != nil && taxonomy.Class(filter.Class).Valid()`
// defers it too, because Class("") is not Valid: with NATS (or Redis)
// out of reach it is now exit 1, a connection error, and a script reads
// "outage, try again" for "you called it wrong".
func TestForceWithoutClassIsUsageEvenWithNATSDown(t *testing.T) {
	out := runNoFleet(t, "replay", "--yes", "--force")
	if out.code != ExitUsage || !strings.Contains(out.stderr, "--force needs --class") {
		t.Fatalf("replay --yes --force (no --class), NATS down: exit %d, want %d with \"--force needs --class\"\nstderr:\n%s",
			out.code, ExitUsage, out.stderr)
	}
}

// Regression (found in review of this session's fix, twenty-second
// session): a mistyped --class on a real replay or a drain during a Redis
// outage:
// checkClass needs only NATS (the DLQ and parked streams), but it runs
// after openFleet(requireStoresCheck), which fails on Redis first. The
// on-call gets exit 1 and a Redis error, not exit 3 and "did you mean
// QUOTA_EXHAUSTED?" (before 7a75ac0: exit 3 at once). Checking the class
// once NATS is open, before the stores, keeps the usage error.
func TestClassTypoDuringRedisOutageIsStillUsage(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("quota", 2, "QUOTA_EXHAUSTED", 0)

	down := downRedisURL(t)

	for _, args := range [][]string{
		{"replay", "--class", "QUOTA", "--yes"},
		{"drain", "--class", "QUOTA", "--metrics-addr", ""},
	} {
		out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": down}, args...)
		if out.code != ExitUsage || !strings.Contains(out.stderr, "did you mean QUOTA_EXHAUSTED?") {
			t.Errorf("%v with the fleet's Redis down: exit %d, want %d and \"did you mean QUOTA_EXHAUSTED?\"\nstderr:\n%s",
				args, out.code, ExitUsage, out.stderr)
		}
	}
}
