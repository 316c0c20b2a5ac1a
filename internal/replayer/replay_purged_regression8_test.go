package replayer

import (
	"context"
	"testing"
	"time"
)

// Regression (found in review, twenty-fifth session): on-call A runs
// `replay --class SERVER` on a terminal and is asked "replay 5 entries?
// Type yes"; while the prompt waits (well under the requests' duplicate
// window), on-call B decides the entries are garbage and runs `purge
// --class SERVER --yes`: they are gone from the DLQ. A then types yes.
//
// What a user saw: A's replay published all 5 requests from the plan it
// read before the prompt (exec.replay only checked that an entry was still
// in the DLQ when the plan was older than half the duplicate window) and
// printed REPLAYED 5: work another engineer deliberately deleted ran
// anyway (the same happened with entries B parked for review: they ran,
// and stayed parked as "needing a person").
//
// Now a plan confirmed at a prompt may be stale (ExecOptions.StalePlan):
// each replay first checks its entry is still there, and a gone one is
// counted "already gone" and not published.
func TestReplayConfirmedAfterAPurgePublishesNothing(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	x.seed("rp", 5, "SERVER", 0)

	p := startPrompted(ctx, t, x, "replay", "--class", "SERVER")

	x.run(ctx, nil, "purge", "--class", "SERVER", "--yes").must(t, ExitOK, "concurrent purge")
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("the purge left %v in the DLQ", left)
	}

	code := p.answerYes(ctx, t)
	if code != ExitOK {
		t.Errorf("replay exit %d, want %d", code, ExitOK)
	}
	if tot := parseSummaryTotal(t, p.o.String()); tot["REPLAYED"] != 0 || tot["ALREADY GONE"] != 5 || tot["ERRORS"] != 0 {
		t.Errorf("replay summary total %v, want REPLAYED 0, ALREADY GONE 5, ERRORS 0", tot)
	}
	if n := len(x.requestMsgIDs()); n != 0 {
		t.Errorf("the replay published %d requests of entries another engineer purged from the DLQ while it waited at its prompt; want 0", n)
	}
}
