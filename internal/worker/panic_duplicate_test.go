package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// switchablePanicLocker panics taking any lock while on is set (a lock
// client bug deployed, or hit, after an invocation was dead-lettered).
type switchablePanicLocker struct {
	session.Locker
	on *atomic.Bool
}

func (l switchablePanicLocker) Acquire(ctx context.Context, k session.Key, owner string, d time.Duration) (*session.Lease, error) {
	if l.on.Load() {
		panic("lock client bug")
	}
	return l.Locker.Acquire(ctx, k, owner, d)
}

// Regression (found in review, twenty-first session): a panicking duplicate of a
// dead-lettered invocation keeps its first outcome.
// An invocation dead-lettered as RATE_LIMITED (user told "queued", the DLQ
// entry waits for the automatic replay) whose ack is lost is redelivered.
// That redelivery is a duplicate: the dead letter, its record and its result
// all exist. If the worker panics on the duplicate (a bug before the record
// is read), afterPanic treats only a *completed* record as "already done":
// a dead-lettered one of the same replay generation is dead-lettered a
// second time as UNKNOWN. Its record is overwritten (class UNKNOWN, reason
// "panicked", while the DLQ entry still says RATE_LIMITED), and a second,
// different result replaces the first: the user who was told "queued"
// is now told "Something went wrong" although the automatic replay will
// still run the invocation.
func TestPanicOnDuplicateOfDeadLetterKeepsTheFirstOutcome(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const id = "inv-review-dup-panic"
	var bug atomic.Bool
	var dropped atomic.Bool
	ljs := &lossyJS{JetStream: e.js, dropAck: func(m jetstream.Msg) bool {
		// The dead letter's ack is lost: the message comes back after AckWait.
		return m.Headers().Get(jetstream.MsgIDHeader) == id && dropped.CompareAndSwap(false, true)
	}}
	e.deps = func(d *worker.Deps) {
		d.JS = ljs
		d.Locker = switchablePanicLocker{Locker: d.Locker, on: &bug}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "hi"), nil)
	first := e.await(id)
	if first.Status != envelope.StatusDeadLettered || first.ErrorClass != "RATE_LIMITED" || first.UserMessage != worker.MsgQueued {
		t.Fatalf("first result %+v, want dead_lettered RATE_LIMITED queued", first)
	}
	bug.Store(true)
	// The redelivery (after AckWait) panics twice, then it is gone.
	eventually(t, "the redelivered duplicate handled", func() bool { return dropped.Load() && e.pending() == 0 })

	rec, err := e.invs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := worker.DecodeRecord(rec)
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject(id))
	if err != nil {
		t.Fatal(err)
	}
	lastRes, err := envelope.DecodeResult(last.Data)
	if err != nil {
		t.Fatal(err)
	}
	if lastRes.ErrorClass != first.ErrorClass || lastRes.UserMessage != first.UserMessage || r == nil || r.Class != "RATE_LIMITED" {
		cls := ""
		if r != nil {
			cls = r.Class
		}
		t.Errorf("after a panicking duplicate of a dead-lettered invocation: last result %s %s %q, record class %q (error %q); "+
			"want the first outcome kept (RATE_LIMITED, %q): the DLQ entry still says RATE_LIMITED and will be replayed",
			lastRes.Status, lastRes.ErrorClass, lastRes.UserMessage, cls, rec.Error, worker.MsgQueued)
	}
	for _, en := range e.dlqEntries() {
		t.Logf("DLQ entry: %s %q", en.Class, en.Reason)
	}
}

// panicAfterFirstSessions panics loading a session while on is set, except
// the first load after it was set (a decoder bug hit on the second read of
// a delivery: after the worker wrote the invocation's running record).
type panicAfterFirstSessions struct {
	*session.Memory
	on    *atomic.Bool
	loads atomic.Int32
}

func (s *panicAfterFirstSessions) GetOrCreate(ctx context.Context, k session.Key) (*session.Session, error) {
	if s.on.Load() && s.loads.Add(1) > 1 {
		panic("session decoder bug")
	}
	return s.Memory.GetOrCreate(ctx, k)
}

// Regression (found in review, twenty-first session): the panic's dead letter
// keeps a forced replay's budget reset.
// A forced CALL_BUDGET replay resets the budget once (Record.BudgetBase),
// and "the replays after it keep the reset instead of being charged the
// calls before it" (outcome.go). Every dead letter keeps BudgetBase in the
// record, except afterPanic's: it records the dead letter with a job whose
// bases are zero. Here the forced replay panics (a bug) until afterPanic
// dead-letters it; after the fix the on-call replays that UNKNOWN entry, and
// the replay is charged the calls of the run before the reset: it is
// dead-lettered CALL_BUDGET ("stuck") again without the model answering.
func TestPanicDeadLetterKeepsTheForcedReplaysBudgetReset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const id = "inv-review-panic-budget"
	var bug atomic.Bool
	sessions := &panicAfterFirstSessions{Memory: e.sessions, on: &bug}
	e.deps = func(d *worker.Deps) { d.Agents["support"].Sessions = sessions }
	call := func() agenttest.Step {
		return agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"}))
	}
	llm := agenttest.NewScriptedModel(call(), call(), agenttest.Reply(agenttest.Text("done")))
	ag := e.supportAgent(llm)
	ag.MaxModelCalls = 2
	e.startWorker("w1", ag, worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	e.publish(request(id, "s1", "loop"), nil)
	if res := e.await(id); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "CALL_BUDGET" {
		t.Fatalf("first run: %+v", res)
	}
	eventually(t, "first message acked", func() bool { return e.pending() == 0 })

	// The person forces the replay (fresh budget); it hits a panic bug on
	// both of its deliveries and is dead-lettered UNKNOWN by afterPanic.
	bug.Store(true)
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request(id, "s1", "loop")), "replay:"+id+":1",
		map[string]string{envelope.HeaderReplayCount: "1", envelope.HeaderResume: "true", envelope.HeaderFreshBudget: "true"})
	if res := e.await(id); res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("forced replay: %+v, want the panic dead letter", res)
	}
	eventually(t, "forced replay terminated", func() bool { return e.pending() == 0 })
	rec, err := e.invs.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := worker.DecodeRecord(rec)

	// The fix is deployed; the UNKNOWN entry is replayed by hand.
	bug.Store(false)
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request(id, "s1", "loop")), "replay:"+id+":2",
		map[string]string{envelope.HeaderReplayCount: "2", envelope.HeaderResume: "true"})
	res := e.await(id)
	if res.Status != envelope.StatusCompleted || llm.Calls() != 3 {
		t.Errorf("replay after the fix: %s %s %q after %d model calls (record after the panic dead letter: budget_base %d); "+
			"want completed with one more model call: the forced replay's budget reset (2 earlier calls) was dropped by afterPanic's record",
			res.Status, res.ErrorClass, res.UserMessage, llm.Calls(), r.BudgetBase)
	}
}
