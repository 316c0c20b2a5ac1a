package replayer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// publishAged dead-letters a SERVER entry of invocation id for order,
// replayed replayCount times, that failed at failedAt and first failed at
// firstFailed.
func publishAged(t *testing.T, x *fx, id, order string, replayCount int, failedAt, firstFailed time.Time) {
	t.Helper()
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data, _ := request(id, order).Encode()
	e := &dlq.Entry{InvocationID: id, Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, ReplayCount: replayCount, Worker: "w-test", Model: "sim:support",
		FailedAt: failedAt, FirstFailedAt: firstFailed}
	e.SetRequest(data)
	if _, err := x.pub.Publish(pctx, e); err != nil {
		t.Fatal(err)
	}
}

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
	old := time.Now().UTC().Add(-20 * 24 * time.Hour) // past the default 15-day retention
	publishAged(t, x, "aged-0", "A-1001", 0, old, old)
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
	old := time.Now().UTC().Add(-20 * 24 * time.Hour) // past the default 15-day retention
	publishAged(t, x, "aged-1", "A-1002", 1, time.Now().UTC().Add(-time.Hour), old)
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
