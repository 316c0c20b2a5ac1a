package replayer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// seedRefusedAndFailed stores the two DLQ entries of one invocation that commit
// 9076207 lets coexist: the BAD_INPUT refusal of its first request
// (dlq.PublishAsReceived, named by the request's stream sequence) and the
// RATE_LIMITED dead letter of the producer's resend of the same id, which
// ran (dlq.Publish, dlq-<id>-0). Both are at replay 0.
func (x *fx) seedRefusedAndFailed(ctx context.Context, id string) {
	x.t.Helper()
	data, _ := request(id, "A-1").Encode()
	refused := &dlq.Entry{InvocationID: id, Agent: "support", Class: "BAD_INPUT",
		Reason: `unknown agent "support"`, DeliveryCount: 1, Worker: "w-old", SourceSeq: 7}
	refused.SetRequest(data)
	if ack, err := x.pub.PublishAsReceived(ctx, refused); err != nil || ack.Duplicate {
		x.t.Fatalf("refusal: %v (duplicate %v)", err, ack != nil && ack.Duplicate)
	}
	failed := &dlq.Entry{InvocationID: id, Agent: "support", Class: "RATE_LIMITED", Reason: "model 429 after retries",
		Retryable: true, DeliveryCount: 1, Worker: "w-new", Model: "sim:support", SourceSeq: 12}
	failed.SetRequest(data)
	if ack, err := x.pub.Publish(ctx, failed); err != nil || ack.Duplicate {
		x.t.Fatalf("real dead letter: %v (duplicate %v)", err, ack != nil && ack.Duplicate)
	}
	if n := x.streamState(x.sc.DLQStream).Msgs; n != 2 {
		x.t.Fatalf("the DLQ holds %d entries, want the 2 the fix lets coexist", n)
	}
}

// Regression (found in review of this session's fix, twenty-third session): parking both entries of an
// invocation that has a BAD_INPUT refusal and a real dead letter at the
// same replay count gave both parked copies parked-<id>-0 (derived from
// dlq.EntryMsgID), the parked stream dropped the second as a duplicate,
// Park ignored the duplicate PubAck, and the engine deleted the DLQ entry.
//
// Parking by hand (dlq-replayer park --invocation, the runbook's way to set
// entries aside for a longer look) takes both entries of the invocation.
// The invocation's replayable RATE_LIMITED dead letter (its user was told
// "queued") was then nowhere. The parked copy is now named after the
// stored DLQ message id (parked-seq:7-0 for the refusal).
func TestParkKeepsBothEntriesOfARefusedAndFailedInvocation(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	const id = "inv-park-pair"
	x.seedRefusedAndFailed(ctx, id)

	x.run(ctx, nil, "park", "--invocation", id, "--yes").must(t, ExitOK, "park --invocation")
	if left := x.dlqIDs(); len(left) != 0 {
		t.Fatalf("left in the DLQ: %v", left)
	}
	var classes []string
	r := dlq.NewReader(x.js, dlq.Config{Stream: x.cfg.Replay.ParkedStream, Prefix: x.cfg.Replay.ParkedPrefix})
	for it, err := range r.List(ctx, dlq.Filter{}) {
		if it == nil {
			t.Fatal(err)
		}
		if it.Entry != nil {
			classes = append(classes, it.Entry.Class)
		}
	}
	if len(classes) != 2 {
		t.Fatalf("the parked stream holds %v: both entries were deleted from the DLQ but only one was parked", classes)
	}
}

// Regression (found in review of this session's fix, twenty-third session): the replays of an
// invocation's BAD_INPUT refusal and of its real dead letter at the same
// replay count shared replay:<id>:<n+1>, so after a forced replay of the
// refusal the real entry's replay was dropped as a duplicate and its entry
// deleted as "already replayed", never republished.
//
// EntryReplayMsgID is replay:<id>:<replay+1> for both entries; the
// refusal's replay is now replay:seq:<source sequence>:<n+1>
// (ItemReplayMsgID). The refusal here was of a body
// naming an agent the fleet does not run yet ("billing", mid-rollout); the
// producer's resend named "support", ran, and was dead-lettered
// RATE_LIMITED. A person forces the BAD_INPUT entries' replay (the
// refusal's body goes to agent.requests.billing, as replay:<id>:1); the
// next replay of the transient entries within the requests' duplicate
// window then publishes the RATE_LIMITED entry's request under the same
// replay:<id>:1, the server drops it as a duplicate, and the entry is
// deleted as "already replayed": the support request its user was told is
// queued is never republished.
func TestForcedRefusalReplayDoesNotSwallowTheRealReplay(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	const id = "inv-replay-pair"
	refused := billingRefusal(id)
	if _, err := x.pub.PublishAsReceived(ctx, refused); err != nil {
		t.Fatal(err)
	}
	good, _ := request(id, "A-1").Encode()
	failed := &dlq.Entry{InvocationID: id, Agent: "support", Class: "RATE_LIMITED", Reason: "model 429 after retries",
		Retryable: true, DeliveryCount: 1, Worker: "w-new", Model: "sim:support", SourceSeq: 12}
	failed.SetRequest(good)
	if ack, err := x.pub.Publish(ctx, failed); err != nil || ack.Duplicate {
		t.Fatalf("real dead letter: %v", err)
	}

	x.run(ctx, nil, "replay", "--class", "BAD_INPUT", "--force", "--invocation", id, "--yes").must(t, ExitOK, "forced BAD_INPUT replay")
	out := x.run(ctx, nil, "replay", "--invocation", id, "--yes")

	s, err := x.js.Stream(ctx, x.sc.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		subjects = append(subjects, m.Subject)
		if m.Subject == x.sc.RequestSubject("support") {
			return
		}
	}
	t.Fatalf("the RATE_LIMITED entry's request was never republished to %s (requests stored: %v; DLQ now %v); the replayer said:\n%s%s",
		x.sc.RequestSubject("support"), subjects, x.dlqIDs(), out.stdout, out.stderr)
}

// Regression (found in review of this session's fix, twenty-third session): Park ignored a duplicate
// PubAck, so an entry whose parked copy was dropped as a duplicate of
// another entry's was deleted from the DLQ though nothing of it was parked.
//
// Two entries written by hand without a message id (ParkedMsgID names
// both parked-<id>-0): the second is not parked, Park says so, and the
// engine leaves it in the DLQ. Parking the same entry again (after a
// crash before its delete) is still fine.
func TestParkRefusesADuplicateOfAnotherEntry(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	now := time.Now().UTC()
	for _, worker := range []string{"w-1", "w-2"} {
		x.putEntry(ctx, &dlq.Entry{V: dlq.Version, InvocationID: "inv-hand", Agent: "support", Class: "SERVER",
			Reason: "model 503", FailedAt: now, FirstFailedAt: now, Worker: worker}, nil)
	}
	f, plan := x.openAndPlan(ctx, Selection{Filter: dlq.Filter{InvocationID: "inv-hand"}, MaxReplays: 3})
	if len(plan) != 2 {
		t.Fatalf("planned %d entries, want 2", len(plan))
	}
	if err := f.Parked.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.Parked.Park(ctx, plan[0].Item, "test", now); err != nil {
		t.Fatalf("first park: %v", err)
	}
	if err := f.Parked.Park(ctx, plan[0].Item, "test", now); err != nil {
		t.Fatalf("the same entry parked again (a rerun after a crash): %v", err)
	}
	err := f.Parked.Park(ctx, plan[1].Item, "test", now)
	if !errors.Is(err, errParkedOther) {
		t.Fatalf("another entry whose copy was dropped as a duplicate: %v, want errParkedOther", err)
	}

	x.run(ctx, nil, "park", "--invocation", "inv-hand", "--yes")
	if left := x.dlqIDs(); len(left) != 1 {
		t.Fatalf("left in the DLQ: %v, want the entry whose parked copy was a duplicate of another's", left)
	}
	if n, _ := f.Parked.Count(ctx); n != 1 {
		t.Fatalf("%d parked copies, want 1", n)
	}
}

// An entry's replay is named by what its stored message id names: an
// entry published as received (dlq-seq:, or its parked copy parked-seq:)
// by its request's sequence, any other by its invocation.
func TestItemReplayMsgIDFollowsTheStoredID(t *testing.T) {
	e := &dlq.Entry{InvocationID: "inv-7", ReplayCount: 2, SourceSeq: 7}
	for stored, want := range map[string]string{
		dlq.SourceMsgID(7, 2): "replay:seq:7:3",
		"parked-seq:7-2":      "replay:seq:7:3",
		dlq.MsgID("inv-7", 2): "replay:inv-7:3",
		"parked-inv-7-2":      "replay:inv-7:3",
		"":                    "replay:inv-7:3",
	} {
		it := &dlq.Item{Entry: e, Header: nats.Header{}}
		if stored != "" {
			it.Header.Set(dlq.HeaderMsgID, stored)
		}
		if got := ItemReplayMsgID(it); got != want {
			t.Errorf("stored %q: replay id %q, want %q", stored, got, want)
		}
	}
}

// billingRefusal is the BAD_INPUT entry of a request for invocation id
// naming the agent "billing", which no worker runs: a refusal stored at
// sequence 7 of the requests stream.
func billingRefusal(id string) *dlq.Entry {
	billing := request(id, "A-1")
	billing.Agent = "billing"
	data, _ := billing.Encode()
	refused := &dlq.Entry{InvocationID: id, Agent: "billing", Class: "BAD_INPUT",
		Reason: `unknown agent "billing"`, DeliveryCount: 1, Worker: "w-old", SourceSeq: 7}
	refused.SetRequest(data)
	return refused
}
