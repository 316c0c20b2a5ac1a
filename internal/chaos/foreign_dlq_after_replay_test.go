package chaos

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): A DLQ entry under an
// invocation id the run never submitted is a violation ("the run's NATS is
// its own"), but only when it is in the snapshot the replay phase took before running dlq-replayer: the entries
// read at the end are counted for the run's own ids only, and those under
// an unknown id are skipped. So an entry the replay phase itself produced
// under a mangled id (the phase where requests are republished with
// rewritten headers) passes unseen.
func TestForeignDLQEntryWrittenDuringTheReplayIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	ctx := context.Background()
	id := "chaos-review-fa-0"
	p.finish(t, id, envelope.StatusCompleted, "")

	_, snapshot, _, err := p.h.latestEntries(ctx) // what replay() keeps before running the replayer
	if err != nil {
		t.Fatal(err)
	}
	deadLetterEntry(t, p, "chaos-review-fa-stranger", "BAD_INPUT", false) // written during the replay phase

	rep := checkWithSnapshot(t, p, []string{id}, &Report{ReplayMode: "dlq-replayer replay", beforeReplay: snapshot})
	t.Logf("DLQ foreign %d, DLQ at the end %d entries, violations %v", rep.DLQForeign, rep.DLQAfterEntries, rep.Violations())
	if rep.OK() {
		t.Errorf("a DLQ entry under an id the run never submitted, written after the replay snapshot, leaves the report OK (DLQForeign %d)", rep.DLQForeign)
	}
}
