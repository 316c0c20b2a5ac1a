package replayer

import (
	"context"
	"testing"
	"time"
)

// Regression (found in review, eighteenth session): every replay read its
// DLQ entry back first (a JetStream message get, one round trip per entry)
// to learn whether another replayer had handled it since the plan. That is
// needed only when the plan is older than the requests' duplicate window
// can cover; for a fresh plan the server drops a second publish of the
// same replay as a duplicate. The look-ups halved the bulk replay's speed
// (ReplayVsBare 0.30 of a bare publish against the 0.5). A fresh
// plan replays without them; a stale one still checks
// (TestStalePlanDoesNotReplayAnEntryAnotherReplayerHandled).
func TestFreshPlanReplaysWithoutReadingEachEntryBack(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 20
	x.seed("fresh", n, "SERVER", 0)
	// dlq.Reader.Gone reads with a direct get (counting only the API's
	// message get, as this test did, could not fail; found in review of
	// this session's fix, twenty-fifth session): count both.
	gets := countEntryReads(t, x)
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	sum := NewSummary()
	if err := Execute(ctx, f, plan, ExecOptions{Summary: sum, Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	if got := sum.Total().Replayed; got != n {
		t.Fatalf("replayed %d of %d", got, n)
	}
	if err := x.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if g := gets.Load(); g != 0 {
		t.Fatalf("a fresh plan of %d entries read %d of them back before replaying (one round trip each)", n, g)
	}
}
