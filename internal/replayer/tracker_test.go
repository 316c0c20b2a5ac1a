package replayer

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// An invocation with two entries in one plan: the older one's replay was
// published by an interrupted run (it comes back a duplicate), its replay
// failed again and left the newer one (replayed afresh). The duplicate's
// forget ran after the fresh replay registered and dropped its watch: the
// fresh replay was neither awaited (--wait, the canary) nor counted as
// "no result".
func TestDuplicateDoesNotDropAFreshReplaysWatch(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	now := time.Now().UTC()
	var entries []*dlq.Entry
	for n := range 2 {
		data, _ := request("twice", "A-1").Encode()
		e := &dlq.Entry{InvocationID: "twice", Agent: "support", Class: "SERVER", Reason: "model 503", Retryable: true,
			DeliveryCount: 1, ReplayCount: n, Model: "sim:support", FirstFailedAt: now, FailedAt: now}
		e.SetRequest(data)
		if _, err := x.pub.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	// The interrupted run published the older entry's replay.
	if _, err := x.js.PublishMsg(ctx, ReplayMsg(x.sc, entries[0])); err != nil {
		t.Fatal(err)
	}
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	if len(plan) != 2 {
		t.Fatalf("plan: %d entries", len(plan))
	}
	fresh := make(chan struct{})
	sum := NewSummary()
	err := Execute(ctx, f, plan, ExecOptions{Concurrency: 2, Summary: sum, afterPublish: func(p Planned) error {
		if p.Item.Entry.ReplayCount == 1 {
			close(fresh) // published afresh, its result awaited
			return nil
		}
		select { // the duplicate is forgotten after the fresh replay registered
		case <-fresh:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Total(); c.Replayed != 1 || c.AlreadyReplayed != 1 || c.NoResult != 1 {
		t.Fatalf("summary %+v: want 1 replayed (no result: no worker runs), 1 already replayed", c)
	}
}
