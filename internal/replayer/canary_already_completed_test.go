package replayer

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): an interrupted run (a
// second ^C exits at once) can leave replayed entries behind, up to 256
// per subject. After the requests' duplicate window the replay of one
// whose invocation completed was published afresh, the worker acked it as
// a duplicate without a new result, and after replay.result_timeout the
// tracker's look-up found the invocation's earlier "completed" result and
// counted the canary as passed: the canary never reached the provider, yet
// the rest of the backlog was replayed into a provider that still failed
// (exit 0). Now such an entry is not replayed (counted "already
// completed" and removed from the DLQ) and takes no canary slot: the
// canary is made of replays that run, and halts here.
func TestCanaryIsNotMadeOfAnAlreadyCompletedInvocation(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	res := x.watchResults()
	// An invocation that already completed (its replay by the interrupted
	// run, more than a duplicate window ago) ...
	x.submit(request("done-0", "A-1001"))
	healthy := x.startWorker("w-healthy", simModel(t, ""))
	eventually(t, "done-0 completed", 30*time.Second, func() bool {
		return res.count([]string{"done-0"}, envelope.StatusCompleted) == 1
	})
	healthy.stop()
	// ... whose DLQ entry was left behind, first in the DLQ, and the
	// backlog behind it.
	x.seed("done", 1, "SERVER", 0)
	x.seed("todo", 6, "SERVER", 0)
	// The provider has not recovered.
	x.startWorker("w-down", simModel(t, "server=1.0"))
	out := x.run(ctx, map[string]string{"AGENTFLEET_REPLAY_RESULT_TIMEOUT": "2s"},
		"replay", "--yes", "--canary", "1", "--rate", "0")
	if out.code != ExitHalted {
		t.Fatalf("canary of 1 against a provider that still fails: exit %d, want %d (HALTED (canary)): the canary passed on a replay that never ran and the rest was replayed\nstdout:\n%s\nstderr:\n%s",
			out.code, ExitHalted, out.stdout, out.stderr)
	}
	t.Logf("stderr:\n%s", out.stderr)
	contains(t, out.stderr, "done-0 SERVER: invocation already completed")
	if tot := parseSummaryTotal(t, out.stdout); tot["ALREADY COMPLETED"] != 1 || tot["REPLAYED"] != 1 {
		t.Fatalf("summary %v: want done-0 already completed (not replayed) and only the canary's replay\n%s", tot, out.stdout)
	}
	for _, id := range x.dlqIDs() {
		if id == "done-0" {
			t.Fatalf("the already completed invocation's entry was left in the DLQ: %v", x.dlqIDs())
		}
	}
}
