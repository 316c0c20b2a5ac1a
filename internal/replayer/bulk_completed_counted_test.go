package replayer

import (
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): Review (diffa): the tracker now refuses a stored result of an older
// replay generation than the replay's, on the ground that "the replayer no
// longer publishes those, see exec.completedBefore". But completedBefore
// is only asked while the canary runs: after the canary, with --canary 0,
// and in every drain pass (which has no canary), the replay of an
// invocation that had already completed is still published. The worker
// acks it without running it (the invocation is done) and publishes no new
// result, and the tracker, which used to count the stored "completed"
// result, now counts the replay NO RESULT after waiting out
// replay.result_timeout.
//
// The situation is a real one: a worker dead-letters in steps (DLQ entry,
// then the record); when the record write fails the message is put back and
// its redelivery runs the invocation again, which may complete in the same
// generation as the DLQ entry (record replay count 0, entry replay count 0,
// replay 1).
func TestBulkReplayOfACompletedInvocationCountsCompleted(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	res := x.watchResults()
	// The invocation completed (generation 0) ...
	x.submit(request("done-0", "A-1001"))
	x.startWorker("w-healthy", simModel(t, ""))
	eventually(t, "done-0 completed", 30*time.Second, func() bool {
		return res.count([]string{"done-0"}, envelope.StatusCompleted) == 1
	})
	// ... and a DLQ entry of that generation is in the DLQ.
	x.seed("done", 1, "SERVER", 0)
	out := x.run(ctx, map[string]string{"AGENTFLEET_REPLAY_RESULT_TIMEOUT": "2s"},
		"replay", "--yes", "--canary", "0", "--wait", "--rate", "0")
	t.Logf("stdout:\n%s\nstderr:\n%s", out.stdout, out.stderr)
	tot := parseSummaryTotal(t, out.stdout)
	if tot["NO RESULT"] != 0 || tot["COMPLETED"]+tot["ALREADY COMPLETED"] != 1 {
		t.Fatalf("summary %v: the invocation is completed (its result says so), want it counted COMPLETED "+
			"(or ALREADY COMPLETED), not NO RESULT", tot)
	}
}
