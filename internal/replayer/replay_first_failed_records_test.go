package replayer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, sixteenth session): An entry on the live DLQ is young, but its invocation may have first
// failed long ago: a replay that failed again is dead-lettered anew with
// the original first_failed_at (replay.max_replays defaults to 3, each
// cycle up to streams.dlq_max_age). Its first run's idempotency records
// date from before that first failure, so a plain `replay` 20 days after
// it repeats the effects exactly as `replay --parked` would: the
// RecordsSince rule must hold for it too.
func TestReplayRefusesALiveEntryFirstFailedBeforeTheRecords(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := time.Now().UTC().Add(-20 * 24 * time.Hour) // past the default 15-day retention
	data, _ := request("aged-1", "A-1002").Encode()
	e := &dlq.Entry{InvocationID: "aged-1", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, ReplayCount: 1, Worker: "w-test", Model: "sim:support",
		FailedAt: time.Now().UTC().Add(-time.Hour), FirstFailedAt: old}
	e.SetRequest(data)
	if _, err := x.pub.Publish(pctx, e); err != nil {
		t.Fatal(err)
	}
	if ret := x.cfg.Idempotency.Retention; time.Since(old) <= ret {
		t.Fatalf("test setup: the entry (first failed %v ago) is not older than the retention %v", time.Since(old), ret)
	}
	out := x.run(ctx, nil, "replay", "--class", "SERVER", "--yes")
	for id, n := range x.requestMsgIDs() {
		if strings.HasPrefix(id, "replay:aged-1:") && n > 0 {
			t.Fatalf("replay republished %s, an invocation that first failed %v ago, past idempotency.retention %v "+
				"(its first run's effect records are gone, so a replay repeats them); exit %d, stderr:\n%s",
				id, time.Since(old).Round(time.Hour), x.cfg.Idempotency.Retention, out.code, out.stderr)
		}
	}
}
