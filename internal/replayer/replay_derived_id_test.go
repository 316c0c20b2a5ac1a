package replayer

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, sixteenth session): a BAD_INPUT entry whose invocation id was derived from its request's
// stream sequence (seq-5) and a producer's own invocation named seq-5 are
// two different pieces of work (dlq.EntryMsgID and ParkedMsgID keep their
// ids apart). Replaying the first (after a fix, with --force) must not make
// the second's replay a "duplicate" that is deleted from the DLQ without
// ever being republished.
func TestDerivedIDReplayDoesNotSwallowProducersInvocation(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	derived := &dlq.Entry{InvocationID: dlq.DerivedInvocationID(5), SourceSeq: 5, Agent: "support", Class: "BAD_INPUT",
		Reason: "unknown agent", DeliveryCount: 1, Worker: "w-test"}
	derived.SetRequest([]byte(`{"v":1,"agent":"support","user_id":"u","session_id":"s","message":{"role":"user","parts":[{"text":"hi"}]}}`))
	if _, err := x.pub.Publish(ctx, derived); err != nil {
		t.Fatal(err)
	}
	// The producer's own invocation "seq-5", dead-lettered by an outage.
	real := &dlq.Entry{InvocationID: "seq-5", Agent: "support", Class: "SERVER", Reason: "model 503 after retries",
		Retryable: true, DeliveryCount: 1, Worker: "w-test", Model: "sim:support"}
	data, _ := request("seq-5", "A-1001").Encode()
	real.SetRequest(data)
	if _, err := x.pub.Publish(ctx, real); err != nil {
		t.Fatal(err)
	}
	x.run(ctx, nil, "replay", "--yes", "--class", "BAD_INPUT", "--force").must(t, ExitOK, "forced BAD_INPUT replay")
	out := x.run(context.Background(), nil, "replay", "--yes").must(t, ExitOK, "SERVER replay")
	pub := x.requestMsgIDs()
	total := 0
	for _, n := range pub {
		total += n
	}
	if total != 2 {
		t.Fatalf("%d requests stored for 2 replayed entries (%v): the producer's invocation seq-5 was dropped as a duplicate of the derived entry's replay\nsummary:\n%s\nstderr:\n%s",
			total, pub, out.stdout, out.stderr)
	}
}
