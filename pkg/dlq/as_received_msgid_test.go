package dlq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, twenty-third session): the dead letter of a
// request refused as BAD_INPUT took its invocation's first failure
// generation's message id, and the dead letter of a later real failure of
// the same invocation id was dropped as its duplicate. An entry published
// as received is named by its request's stream sequence: a re-publish of
// the same message is still a duplicate, the invocation's own failure is
// not.
func TestAsReceivedEntryNeverSharesItsInvocationsMsgID(t *testing.T) {
	tg := streamstest.Embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := dlq.NewPublisher(tg.JS, dlqConfig(tg))

	refused := func() *dlq.Entry {
		e := sampleEntry()
		e.Class, e.Reason, e.SourceSeq = "BAD_INPUT", "unknown agent", 7
		return e
	}
	if _, err := p.PublishAsReceived(ctx, refused()); err != nil {
		t.Fatal(err)
	}
	// The same message again (a crash between the publish and the ack).
	ack, err := p.PublishAsReceived(ctx, refused())
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Duplicate {
		t.Fatal("a re-publish of the same message's dead letter was stored twice")
	}
	// The invocation's resend, at another sequence, fails on the provider.
	failed := sampleEntry()
	failed.Class, failed.SourceSeq = "RATE_LIMITED", 12
	ack, err = p.Publish(ctx, failed)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Duplicate {
		t.Fatalf("invocation %s's RATE_LIMITED dead letter (%s) was dropped as a duplicate of its BAD_INPUT refusal (%s)",
			failed.InvocationID, dlq.EntryMsgID(failed), dlq.SourceMsgID(7, 0))
	}
	if n := msgCount(ctx, t, tg.JS, tg.Cfg.DLQStream); n != 2 {
		t.Fatalf("the DLQ holds %d entries, want 2", n)
	}

	noSeq := sampleEntry()
	noSeq.Class, noSeq.SourceSeq = "BAD_INPUT", 0
	if _, err := p.PublishAsReceived(ctx, noSeq); !errors.Is(err, dlq.ErrInvalidEntry) {
		t.Fatalf("an entry without source_seq published as received: %v, want ErrInvalidEntry", err)
	}
}
