package dlq_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// A request without a valid invocation id gets the derived id seq-<n> (its
// AGENT_REQUESTS sequence). "seq-<n>" is also a valid invocation id a
// producer may choose: the dead letter of such an invocation and the dead
// letter of the undecodable request at sequence n must both be stored.
// (With dlq-<invocation_id>-<n> for both they shared one Nats-Msg-Id, and
// the second was dropped as a duplicate: DESIGN says nothing is dropped.)
func TestADerivedIDNeverSharesAnInvocationsMsgID(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))

	// A producer's invocation named "seq-5" fails on the provider.
	named := sampleEntry()
	named.InvocationID, named.Class = "seq-5", "SERVER"
	if _, err := p.Publish(ctx, named); err != nil {
		t.Fatal(err)
	}
	// The request stored at AGENT_REQUESTS sequence 5 is not JSON.
	bad := &dlq.Entry{Class: "BAD_INPUT", Reason: "not JSON", SourceSeq: 5, DeliveryCount: 1, Worker: "w-1"}
	bad.SetRequest([]byte("\xffgarbage"))
	ack, err := p.Publish(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Duplicate {
		t.Fatalf("the BAD_INPUT dead letter of request seq 5 was dropped as a duplicate of invocation %q's entry (Nats-Msg-Id %s); stream holds %d entries",
			named.InvocationID, dlq.EntryMsgID(bad), msgCount(ctx, t, tg.JS, tg.Cfg.DLQStream))
	}
	if n := msgCount(ctx, t, tg.JS, tg.Cfg.DLQStream); n != 2 {
		t.Fatalf("the DLQ holds %d entries, want both", n)
	}
}
