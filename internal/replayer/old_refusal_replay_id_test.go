package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review of this session's fix, twenty-third
// session): the replay of a BAD_INPUT refusal was named by its
// request's sequence only when its stored DLQ id is dlq-seq:... A refusal
// written by a worker older than 9076207 was published with dlq.Publish and
// is stored as dlq-<id>-0, like the invocation's real dead letter that a new
// worker writes for the producer's resend once the DLQ's duplicate window
// has passed (both may sit in the DLQ: BAD_INPUT is never auto-replayed and
// entries live 14 days). Their replays still share replay:<id>:1, so the
// forced replay of the refusal swallows the real entry's replay and the
// entry is deleted as "already replayed" (the defect the commit fixes, on
// entries the fleet holds at the upgrade).
func TestOldWorkersRefusalDoesNotSwallowTheRealReplay(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	const id = "inv-old-refusal"

	// The DLQ's duplicate window is made short so that the second entry,
	// with the same stored id, can be stored as it would be after the
	// default window.
	s, err := x.js.Stream(ctx, x.sc.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	orig := s.CachedInfo().Config
	short := orig
	short.Duplicates = time.Second
	if _, err := x.js.UpdateStream(ctx, short); err != nil {
		t.Fatal(err)
	}

	// An older worker's refusal: dlq.Publish, stored as dlq-<id>-0.
	refused := billingRefusal(id)
	if ack, err := x.pub.Publish(ctx, refused); err != nil || ack.Duplicate {
		t.Fatalf("old refusal: %v", err)
	}
	// The resend's real dead letter, by a new worker, after the window.
	good, _ := request(id, "A-1").Encode()
	for {
		failed := &dlq.Entry{InvocationID: id, Agent: "support", Class: "RATE_LIMITED", Reason: "model 429 after retries",
			Retryable: true, DeliveryCount: 1, Worker: "w-new", Model: "sim:support", SourceSeq: 12}
		failed.SetRequest(good)
		ack, err := x.pub.Publish(ctx, failed)
		if err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the DLQ's duplicate window never passed")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if _, err := x.js.UpdateStream(ctx, orig); err != nil {
		t.Fatal(err)
	}
	if n := x.streamState(x.sc.DLQStream).Msgs; n != 2 {
		t.Fatalf("the DLQ holds %d entries, want 2", n)
	}

	x.run(ctx, nil, "replay", "--class", "BAD_INPUT", "--force", "--invocation", id, "--yes").must(t, ExitOK, "forced BAD_INPUT replay")
	out := x.run(ctx, nil, "replay", "--invocation", id, "--yes")

	if found := x.review5RequestOn(ctx, x.sc.RequestSubject("support")); found {
		return
	}
	t.Fatalf("the RATE_LIMITED entry's request was never republished to %s (DLQ now %v); the replayer said:\n%s%s",
		x.sc.RequestSubject("support"), x.dlqIDs(), out.stdout, out.stderr)
}

// review5RequestOn reports whether the requests stream holds a message on subject.
func (x *fx) review5RequestOn(ctx context.Context, subject string) bool {
	x.t.Helper()
	s, err := x.js.Stream(ctx, x.sc.RequestsStream)
	if err != nil {
		x.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		x.t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		if m.Subject == subject {
			return true
		}
	}
	return false
}
