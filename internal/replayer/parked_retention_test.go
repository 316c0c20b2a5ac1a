package replayer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, sixteenth session): DESIGN.md: "Stored results outlive the DLQ's max age (validated at
// start-up)", and the README's refund "even a replay a week later returns
// the stored refund instead of refunding again". The defaults keep dead
// letters 14 days (streams.dlq_max_age) and idempotency records 15 days
// (idempotency.retention), but a parked entry lives another
// replay.parked_max_age (14 days, counted from when it was parked) in
// AGENT_DLQ_PARKED, and `replay --parked` republishes it whatever its
// age: an entry that failed 20 days ago (parked on day 13) is sent back to
// the workers after its refund's idempotency record and its invocation
// record have expired, so the refund runs again. Neither
// config.Replayer.Validate (retention against dlq_max_age only) nor
// Fleet.CheckRetention (the live DLQ only) covers the parked stream.
func TestReplayParkedRefusesAnEntryOlderThanTheRecords(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := time.Now().UTC().Add(-20 * 24 * time.Hour) // past the default 15-day retention
	data, _ := request("aged-0", "A-1001").Encode()
	e := &dlq.Entry{InvocationID: "aged-0", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, ReplayCount: 0, Worker: "w-test", Model: "sim:support",
		FailedAt: old, FirstFailedAt: old}
	e.SetRequest(data)
	if _, err := x.pub.Publish(pctx, e); err != nil {
		t.Fatal(err)
	}
	x.run(ctx, nil, "park", "--class", "SERVER", "--yes").must(t, ExitOK, "park the aged entry")
	if st := x.streamState(x.cfg.Replay.ParkedStream); st.Msgs != 1 {
		t.Fatalf("parked stream holds %d, want 1", st.Msgs)
	}
	if ret := x.cfg.Idempotency.Retention; time.Since(old) <= ret {
		t.Fatalf("test setup: the entry (%v old) is not older than the retention %v", time.Since(old), ret)
	}
	out := x.run(ctx, nil, "replay", "--parked", "--yes")
	for id, n := range x.requestMsgIDs() {
		if strings.HasPrefix(id, "replay:aged-0:") && n > 0 {
			t.Fatalf("replay --parked republished %s, an entry that first failed %v ago, past idempotency.retention %v "+
				"(its effects' records are gone, so a replay repeats them); exit %d, stdout:\n%s\nstderr:\n%s",
				id, time.Since(old).Round(time.Hour), x.cfg.Idempotency.Retention, out.code, out.stdout, out.stderr)
		}
	}
}
