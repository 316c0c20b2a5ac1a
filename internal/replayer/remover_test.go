package replayer

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Batched removal never takes an entry that was not handled: entries
// skipped at plan time (a non-replayable class on the same subject is
// impossible, so a truncated request stands in), entries dropped from the
// plan after Plan (as drain does), and entries stored during the run all
// stay, while every replayed entry, before and after them, goes.
func TestRemoverKeepsWhatWasNotHandled(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := x.seed("rm", 700, "SERVER", 0) // more than two batches
	// A truncated request on the same subject, in the middle: skipped.
	trunc := &dlq.Entry{InvocationID: "rm-trunc", Agent: "support", Class: "SERVER", Reason: "r", DeliveryCount: 1,
		RequestRaw: []byte(`{"v":1`), RequestTruncated: true, RequestSize: 9000, RequestSHA256: "ab"}
	if _, err := x.pub.Publish(ctx, trunc); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, x.seed("rm2", 300, "SERVER", 0)...)
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	// Drop an entry after planning; it was never handled and must stay.
	dropped := []string{"rm2-200"}
	var act []Planned
	for _, p := range plan {
		if p.Item.Entry != nil && slices.Contains(dropped, p.Item.Entry.InvocationID) {
			continue
		}
		act = append(act, p)
	}
	// An entry stored after the plan: not in it, must stay.
	x.seed("late", 1, "SERVER", 0)
	before, err := x.js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := NewSummary()
	if err := Execute(ctx, f, act, ExecOptions{Concurrency: 8, Summary: sum}); err != nil {
		t.Fatal(err)
	}
	after, err := x.js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The 700 entries before the skipped one go in three DeleteBelow calls;
	// the 299 after it one by one.
	if calls := after.API.Total - before.API.Total; calls > 320 {
		t.Errorf("%d JetStream API calls for %d removals: the entries before the skipped one were not removed in batches", calls, len(ids)-len(dropped))
	}
	tot := sum.Total()
	if tot.Replayed != len(ids)-len(dropped) || tot.Skipped != 1 || tot.Errors != 0 {
		t.Fatalf("summary = %+v, want %d replayed, 1 skipped", tot, len(ids)-len(dropped))
	}
	left := x.dlqIDs()
	slices.Sort(left)
	want := []string{"late-0", "rm-trunc", "rm2-200"}
	if !slices.Equal(left, want) {
		t.Fatalf("left in the DLQ: %v, want %v", left, want)
	}
	got := x.requestMsgIDs()
	if len(got) != len(ids)-len(dropped) {
		t.Fatalf("%d replays published, want %d", len(got), len(ids)-len(dropped))
	}
}

// A plan filtered by invocation (or by time) does not hold every entry of
// its subject, so nothing is removed in batches: only the selected entry
// goes.
func TestRemoverFilteredPlanDeletesOneByOne(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x.seed("f", 20, "SERVER", 0)
	f, err := OpenFleet(ctx, x.cfg, false, nopLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plan, err := Plan(ctx, f, Selection{MaxReplays: 3, Filter: dlq.Filter{InvocationID: "f-15"}})
	if err != nil || len(plan) != 1 {
		t.Fatalf("plan = %d items, %v", len(plan), err)
	}
	if err := Execute(ctx, f, plan, ExecOptions{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	left := x.dlqIDs()
	if len(left) != 19 || slices.Contains(left, "f-15") {
		t.Fatalf("left in the DLQ: %v, want all but f-15", left)
	}
}

// A halted run leaves the entries it never reached, and removes the ones it
// replayed even when they sit behind one that was not reached.
func TestRemoverHaltLeavesUnreached(t *testing.T) {
	x := newFx(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x.seed("h", 40, "SERVER", 0)
	f, plan := x.openAndPlan(ctx, Selection{MaxReplays: 3})
	// Replay only every other entry of the plan: the rest are "not
	// reached" from the remover's point of view (their slots stay pending).
	var some []Planned
	for i, p := range plan {
		if i%2 == 0 {
			some = append(some, p)
		}
	}
	x2 := &exec{f: f, opts: ExecOptions{}, sum: NewSummary()}
	x2.deletes = make(chan func(), 64)
	done := make(chan struct{})
	go func() {
		for d := range x2.deletes {
			d()
		}
		close(done)
	}()
	rm := newRemover(x2, plan)
	var removed atomic.Int64
	for _, p := range some {
		rm.remove(ctx, p, func(err error) {
			if err != nil {
				t.Errorf("remove %d: %v", p.Item.Seq, err)
			}
			removed.Add(1)
		})
	}
	rm.flush(ctx)
	close(x2.deletes)
	<-done
	if int(removed.Load()) != len(some) {
		t.Fatalf("%d removals reported, want %d", removed.Load(), len(some))
	}
	left := x.dlqIDs()
	if len(left) != len(plan)-len(some) {
		t.Fatalf("left %d entries, want %d", len(left), len(plan)-len(some))
	}
	for i, p := range plan {
		if i%2 == 1 && !slices.Contains(left, p.Item.Entry.InvocationID) {
			t.Fatalf("%s was removed but never handled", p.Item.Entry.InvocationID)
		}
	}
}
