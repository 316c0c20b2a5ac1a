package replayer

import (
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, eighteenth session): Counts.Replayed is
// documented as "republished (a new request stored)", and runbook step 5
// reads the summary's REPLAYED column as what was replayed. When the
// replay's PubAck came back but removing its DLQ entry failed, the entry
// was counted only under ERRORS: the table said REPLAYED 0 next to
// COMPLETED 3 for the same run (and drain's
// agentfleet_dlq_replayer_replayed_total missed them while results_total
// counted their results). On-call read "nothing was replayed" for work
// that ran. It is counted replayed on the PubAck now, and the failed
// delete under errors.
func TestSummaryCountsAReplayWhoseDeleteFailed(t *testing.T) {
	x := newFx(t, true)
	ctx := ctxT(t)
	res := x.watchResults()
	ids := x.seed("nodel", 3, "SERVER", 0)
	x.startWorker("w-ok", simModel(t, ""))
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	// The DLQ stream refuses deletes and purges from now on (a permission
	// problem, a stream an operator sealed, a server that times out).
	s, err := x.js.Stream(ctx, x.sc.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.DenyDelete, cfg.DenyPurge = true, true
	if _, err := x.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var progress syncBuf
	sum := NewSummary()
	err = Execute(ctx, f, plan, ExecOptions{Concurrency: 2, Wait: true, ResultTimeout: 20 * time.Second, Summary: sum, Progress: &progress})
	if err == nil {
		t.Fatal("a run whose deletes failed returned no error")
	}
	eventually(t, "the replays completed", 10*time.Second, func() bool { return res.count(ids, envelope.StatusCompleted) == len(ids) })
	c := sum.Total()
	t.Logf("progress:\n%s", progress.String())
	if !strings.Contains(progress.String(), "replayed, but ERROR deleting") {
		t.Fatalf("deletes did not fail: %+v", c)
	}
	if c.Replayed != len(ids) {
		var b strings.Builder
		sum.Write(&b, false)
		t.Fatalf("%d replays were published and completed, but the summary counts %d replayed:\n%s", len(ids), c.Replayed, b.String())
	}
}
