package replayer

import (
	"net"
	"strings"
	"testing"
)

// Regression (found in review, nineteenth session): `replay --dry-run`
// used to open no store at all (OpenFleet without stores: the plan needs
// only the DLQ and the records' retention, which on Redis is the
// replayer's own idempotency.retention), so at 3 a.m. with the fleet's
// Redis down on-call could still run the runbook's step 4 and see what a
// replay would take once Redis is back. The stores check (commit 9312e47)
// connected to Redis first (ConnectRedis pings it) also for the dry run,
// and a Redis that did not answer failed the dry run with exit 1 and no
// plan. A check that cannot be decided is now a warning for the dry run
// ("stores not checked: …"), as no worker consumer or a consumer that
// records no stores already were, and the plan is printed (the real run
// needs Redis and fails there anyway).
func TestDryRunDuringRedisOutageStillPrintsThePlan(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	x.seed("outage", 2, "SERVER", 0)

	// Redis is down: a port on which nothing listens.
	down := downRedisURL(t)

	out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": down}, "replay", "--dry-run")
	if out.code != ExitOK || !strings.Contains(out.stdout, "would replay 2") {
		t.Fatalf("replay --dry-run with the fleet's Redis down: exit %d, want %d and the plan (it opens no store and worked before the stores check)\nstdout:\n%s\nstderr:\n%s",
			out.code, ExitOK, out.stdout, out.stderr)
	}
	contains(t, out.stderr, "warning: stores not checked: redis")
	// The real replay needs its stores: it fails as before the check.
	x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": down}, "replay", "--yes").must(t, ExitError, "replay with Redis down")
}

// downRedisURL returns a Redis URL on a loopback port nothing listens on:
// the fleet's Redis during an outage.
func downRedisURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "redis://" + l.Addr().String()
}
