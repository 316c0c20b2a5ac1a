package replayer

import (
	"strings"
	"testing"
)

// Regression (found in review, twenty-second session): the runbook ("Before
// you start") and the package doc say that when the stores check cannot be
// decided (Redis down, or the worker consumer cannot be read) `show` and
// `replay --dry-run` change nothing and go on with "warning: stores not
// checked: …". The dry run did; show failed with exit 1 and printed
// nothing, so with the fleet's Redis down on-call could not even see the
// DLQ entry of the invocation (class, reason, tools completed), which needs
// no store. show now opens the stores best-effort, prints the entry with
// the warning and exit 0, and says that the record, session events and
// tool effects were not looked up.
func TestShowDuringRedisOutageGoesOnWithAWarning(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	ids := x.seed("outage", 1, "SERVER", 0)

	down := downRedisURL(t)

	out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": down}, "show", ids[0])
	if out.code != ExitOK || !strings.Contains(out.stdout, "DLQ entry seq") || !strings.Contains(out.stderr, "stores not checked") {
		t.Fatalf("show %s with the fleet's Redis down: exit %d, want %d, the DLQ entry and a \"stores not checked\" warning (runbook: show goes on)\nstdout:\n%s\nstderr:\n%s",
			ids[0], out.code, ExitOK, out.stdout, out.stderr)
	}
}
