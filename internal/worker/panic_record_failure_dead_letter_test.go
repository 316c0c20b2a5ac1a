package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a message the
// worker panicked on MaxDeliveries times got its UNKNOWN dead letter
// (afterPanic) under the message id of its replay generation,
// dlq-<invocation_id>-<n>; then its record write failed, and the message
// came back. The redelivery did not panic (the bug was intermittent), ran,
// and failed transiently (RATE_LIMITED): its dead letter took the same
// message id, and AGENT_DLQ dropped it as a duplicate within its window.
// The record and the user's result said RATE_LIMITED, "queued", but the
// DLQ held only the UNKNOWN entry, which waits for a person: nothing
// replayed the work automatically. The redelivery's dead letter now lands
// (named by its request's stream sequence, as an entry published as
// received is) when the entry holding its generation's id records another
// class; the invocation record still keeps the two entries' replays from
// running the work twice.
func TestRedeliveryDeadLetterLandsOverThePanicsEntryWhoseRecordFailed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const id = "inv-panic-record-failed"
	var bug atomic.Bool
	bug.Store(true)
	// The panic's record write fails, and the bug does not come back.
	invs := &failOnceInvocations{InvocationStore: e.invs, after: func() { bug.Store(false) }}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		d.Locker = switchablePanicLocker{Locker: d.Locker, on: &bug}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}),
		agenttest.Reply(agenttest.Text("done")),
		agenttest.Reply(agenttest.Text("done again")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "hi"), nil)

	res := e.await(id)
	if !invs.failed.Load() || res.Status != envelope.StatusDeadLettered || res.ErrorClass != "RATE_LIMITED" || res.UserMessage != worker.MsgQueued {
		t.Fatalf("result %+v (panic's record write failed: %v), want the redelivery's RATE_LIMITED \"queued\"", res, invs.failed.Load())
	}
	eventually(t, "the message acked", func() bool { return e.pending() == 0 })
	var queued bool
	for _, en := range e.dlqEntries() {
		t.Logf("DLQ entry: %s retryable=%v replay=%d %q", en.Class, en.Retryable, en.ReplayCount, en.Reason)
		queued = queued || (en.Class == "RATE_LIMITED" && en.Retryable)
	}
	if !queued {
		t.Fatalf("the user was told %q but the DLQ holds no RATE_LIMITED entry for the automatic replay: "+
			"the redelivery's dead letter was dropped as a duplicate of the panic's UNKNOWN entry", res.UserMessage)
	}

	// Both entries are replayed, each under the message id the replayer
	// gives it (the on-call forces the UNKNOWN one too): the ids differ, so
	// the requests stream keeps both, and the invocation record alone must
	// keep the work from running twice.
	r := dlq.NewReader(e.js, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix})
	ids := map[string]bool{}
	for it, err := range r.List(ctx, dlq.Filter{InvocationID: id}) {
		if err != nil {
			t.Fatal(err)
		}
		ids[replayer.ItemReplayMsgID(it)] = true
		if _, err := e.js.PublishMsg(ctx, replayer.ReplayItemMsg(e.sc, it)); err != nil {
			t.Fatal(err)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("replay message ids %v, want two entries replayed under two ids", ids)
	}
	if res := e.await(id); res.Status != envelope.StatusCompleted {
		t.Fatalf("replay: %+v, want completed", res)
	}
	eventually(t, "both replays handled", func() bool { return e.pending() == 0 })
	rec, err := e.invs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model calls %d, duplicates acked %v, record %s", llm.Calls(), w.count("support", "duplicate"), rec.Status)
	if llm.Calls() != 2 || rec.Status != session.InvocationCompleted {
		t.Errorf("after replaying both entries: %d model calls (want 2: the failed run and one replay), record %s: the work ran twice",
			llm.Calls(), rec.Status)
	}
}

// The other way round, the entry holding the generation's id is kept alone
// (a decision of the fix above): a run dead-lettered RATE_LIMITED whose
// record write failed, and whose redelivery the worker then panicked on
// until afterPanic dead-lettered it UNKNOWN. The RATE_LIMITED entry is
// replayed automatically and its replay runs the work (failing again, under
// the next generation's id, while the bug lasts): an UNKNOWN entry beside
// it would be one more for a person, which its replay would only find
// superseded.
func TestPanicDeadLetterAddsNoEntryBesideAnAutoReplayedOne(t *testing.T) {
	e := newEnv(t)
	const id = "inv-run-record-failed-then-panic"
	var bug atomic.Bool
	// The run's record write fails, and the bug starts.
	invs := &failOnceInvocations{InvocationStore: e.invs, after: func() { bug.Store(true) }}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		d.Locker = switchablePanicLocker{Locker: d.Locker, on: &bug}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "hi"), nil)
	if res := e.await(id); !invs.failed.Load() || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("result %+v (run's record write failed: %v), want the panic's UNKNOWN dead letter", res, invs.failed.Load())
	}
	eventually(t, "the message terminated", func() bool { return e.pending() == 0 })
	en := e.dlqEntries()
	for _, x := range en {
		t.Logf("DLQ entry: %s retryable=%v %q", x.Class, x.Retryable, x.Reason)
	}
	if len(en) != 1 || en[0].Class != "RATE_LIMITED" {
		t.Errorf("%d DLQ entries, want the run's RATE_LIMITED entry alone", len(en))
	}
}
