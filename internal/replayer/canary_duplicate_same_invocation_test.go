package replayer

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-third session): a canary entry whose
// replay came back a duplicate was counted when a newer entry of its
// invocation was published afresh, so --canary 2 checked one real replay
// twice and skipped the next entry.
//
// An interrupted run published the replay of dup-0's entry (replay count 0)
// and died before deleting it; that replay failed again, so the DLQ now
// also holds dup-0's next entry (replay count 1). A rerun with --canary 2
// meets the first entry as a duplicate (no result follows it) and the
// second as one fresh replay. The runbook (step 5): "A replay that an
// earlier, interrupted run already published comes back a duplicate and is
// not counted: the canary takes the next entry instead, so 5 fresh replays
// are checked." So the canary must be dup-0's fresh replay and fresh-0's:
// fresh-0's replay must be published before the canary is judged.
func TestCanaryDoesNotCountADuplicateOfAnInvocationWithAFreshReplay(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	pubEntry := func(id string, rc int) *dlq.Entry {
		t.Helper()
		data, _ := request(id, "A-1001").Encode()
		e := &dlq.Entry{InvocationID: id, Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
			Retryable: true, DeliveryCount: 1, ReplayCount: rc, Worker: "w-test", Model: "sim:support"}
		e.SetRequest(data)
		if _, err := x.pub.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	e0 := pubEntry("dup-0", 0)
	// The interrupted run's publish of e0's replay (replay:dup-0:1).
	if _, err := x.js.PublishMsg(ctx, ReplayMsg(x.sc, e0), jetstream.WithExpectStream(x.sc.RequestsStream)); err != nil {
		t.Fatal(err)
	}
	pubEntry("dup-0", 1) // that replay failed again
	for i := range 3 {
		pubEntry(fmt.Sprintf("fresh-%d", i), 0)
	}

	// No worker: no result comes back, so the canary halts; what matters
	// is which replays it was made of.
	env := map[string]string{"AGENTFLEET_REPLAY_RESULT_TIMEOUT": "1s"}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := x.run(rctx, env, "replay", "--yes", "--canary", "2", "--rate", "0").must(t, ExitHalted, "canary")
	ids := x.requestMsgIDs()
	if ids["replay:dup-0:2"] != 1 {
		t.Fatalf("dup-0's fresh replay was not published: %v\nstderr:\n%s", ids, out.stderr)
	}
	if ids["replay:fresh-0:1"] != 1 {
		t.Fatalf("the canary of 2 was made of one fresh replay (dup-0's, counted twice with the duplicate of the "+
			"interrupted run's): fresh-0 was never replayed before the canary was judged.\nrequests: %v\nstderr:\n%s", ids, out.stderr)
	}
}
