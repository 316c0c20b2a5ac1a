package chaos

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): The package doc states
// lost = 0 as "every request ended in exactly one of completed,
// dead-lettered or failed-reported", but the checker only looked at the DLQ
// for invocations whose last result is not completed (NotInDLQ). An
// invocation whose last result and record say completed while its dead
// letter (UNKNOWN, "for review, never retried automatically": the replay
// leaves it) is still in the DLQ at the end ended twice: the user got an
// answer, and the on-call is handed a failure to review for the same request
// (a worker that dead-lettered, died before its record said so, and a
// redelivery that ran the request again). The checker counted the entry in
// the "at the end" column and PASSED. Correct: after the replay, a DLQ entry
// left for an invocation that completed is a violation (the replayer removes
// those of the classes it replays).
func TestCompletedInvocationStillDeadLetteredIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	ctx := context.Background()
	id := "chaos-review-two-endings-0"
	deadLetterEntry(t, p, id, "UNKNOWN", false)
	_, snapshot, _, err := p.h.latestEntries(ctx) // the replay phase's snapshot
	if err != nil {
		t.Fatal(err)
	}
	p.finish(t, id, envelope.StatusCompleted, "") // and it completed as well
	p.refund(t, id, "A-1001", 12999)

	rep := checkWithSnapshot(t, p, []string{id}, &Report{ReplayMode: "dlq-replayer replay", beforeReplay: snapshot})
	t.Logf("final %v; DLQ at the end %v (%d entries); violations %q", rep.Final, rep.DLQAfterByClass, rep.DLQAfterEntries,
		strings.Join(rep.Violations(), "; "))
	if rep.OK() {
		t.Errorf("an invocation whose last result is completed and whose UNKNOWN dead letter is still in the DLQ after the replay PASSES")
	}
	if rep.TwoEndings.N != 1 {
		t.Errorf("two endings %v, want the invocation", rep.TwoEndings)
	}
}

// Without a replay a transient entry of a completed invocation is
// legitimate (a worker killed between the entry and the record, the
// redelivery completing the invocation: a replay would remove it), but an
// UNKNOWN one, which no replay removes, is two endings still.
func TestTwoEndingsWithoutAReplay(t *testing.T) {
	p := newProofCheck(t)
	ids := []string{"chaos-ends-0", "chaos-ends-1"}
	deadLetterEntry(t, p, ids[0], "SERVER", true)
	deadLetterEntry(t, p, ids[1], "UNKNOWN", false)
	for i, id := range ids {
		p.finish(t, id, envelope.StatusCompleted, "")
		p.refund(t, id, requestOrder(i), 12999)
	}
	rep := p.check(t, ids, false)
	if rep.TwoEndings.N != 1 || !strings.HasPrefix(rep.TwoEndings.Examples[0], ids[1]+" ") {
		t.Errorf("two endings %v, want %s (UNKNOWN) only", rep.TwoEndings, ids[1])
	}
}
