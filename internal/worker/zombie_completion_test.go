package worker_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-third session): a worker whose session
// lock was lost recorded completed over the new owner's dead_lettered record
// on the NATS KV stores and published a second result.
//
// A worker in NATS-only mode (natssession stores with session.NewGate, as
// internal/app wires them; a Redis Cluster client gets the same sequential
// gate) freezes mid-invocation: its session lease runs out and its
// heartbeats stop, so the request is redelivered to worker B, which takes
// the session over. B's model call fails (SERVER): B dead-letters the
// invocation, tells the user "queued" and acks. Then the zombie A wakes up
// with a final answer from its in-flight model call. Its renewer reported
// the lock lost long before ("session lock lost; stopping at the next step
// boundary"), but a final answer is no step boundary, and the completion is
// fenced only by redissession.Gate's script: the sequential gate stores A's
// answer in the session, overwrites B's dead_lettered record with
// completed, and publishes a second, different final result. The user is
// told "queued" and then "completed" for one request, and on-call holds a
// dead letter of completed work.
//
// The dead-letter path already checks the lock before it writes (lostLock,
// found in review, eighteenth session); the completion path does not when
// the gate cannot fence it. Correct: a worker that no longer holds the
// session lock does not record, publish or ack a completion (it Naks, as
// for a lost lock before a dead letter), so the user gets exactly one
// result.
func TestZombieCompletionLeavesAnotherWorkersDeadLetterNATSKV(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	svc, err := natssession.NewService(ctx, e.js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	locker, err := natssession.NewLocker(ctx, e.js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	invs, err := natssession.NewInvocations(ctx, e.js, natssession.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gate := session.NewGate(locker, invs) // what openNATSStores uses
	freeze := &crashFreeze{}

	// Worker A: one slot, a short lease; renewals and heartbeats cut while
	// frozen. Its model call answers with a final text once released.
	aEntered, aRelease := make(chan struct{}, 1), make(chan struct{})
	aModel := crashBlockingModel(aEntered, aRelease, agenttest.Text("All done: your order is refunded."), nil)
	e.deps = func(d *worker.Deps) {
		d.JS = crashFreezeJS{JetStream: d.JS, f: freeze}
		d.Locker = crashFreezeLocker{Locker: locker, f: freeze}
		d.Invocations, d.Gate = invs, gate
		d.Agents["support"].Sessions = svc
	}
	a := e.startWorker("wA", e.supportAgent(aModel), worker.Config{Concurrency: 1, SessionLease: 600 * time.Millisecond})

	e.publish(request("inv-zc", "szc", "please refund A-1042"), nil)
	<-aEntered
	freeze.frozen.Store(true)

	// Worker B: healthy. It gets the redelivery once A's heartbeats have
	// stopped for AckWait and the session once A's lease has run out; its
	// model call fails with a 503, so it dead-letters the invocation.
	bModel := model.Func{ModelName: "scripted", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			yield(nil, &model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"})
		}
	}}
	e.deps = func(d *worker.Deps) {
		d.Locker, d.Invocations, d.Gate = locker, invs, gate
		d.Agents["support"].Sessions = svc
	}
	b := e.startWorker("wB", e.supportAgent(bModel), worker.Config{})
	first := e.await("inv-zc")
	if first.Status != envelope.StatusDeadLettered {
		t.Fatalf("B's result = %+v; want dead_lettered (the setup failed)", first)
	}
	eventually(t, "B to ack its dead letter", func() bool {
		return b.count("support", "dead_lettered") == 1 && e.pending() == 0
	})

	// A wakes up; its model call answers. A lost the session long ago.
	freeze.frozen.Store(false)
	close(aRelease)
	eventually(t, "worker A to finish its run", func() bool {
		for _, action := range []string{"dead_lettered", "failed", "completed", "nak_stopped", "nak_infra", "duplicate"} {
			if a.count("support", action) > 0 {
				return true
			}
		}
		return false
	})

	// Every result publish lands on AGENT_RESULTS (which keeps only the
	// last per subject, but its sequence counts them all); A publishes
	// before it counts its action.
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.LastSeq; n != 1 {
		last, _ := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-zc"))
		var lastRes *envelope.Result
		if last != nil {
			lastRes, _ = envelope.DecodeResult(last.Data)
		}
		t.Errorf("%d results were published for one request; want 1 (B's dead letter). The last one: %+v", n, lastRes)
	}
	rec, err := invs.Get(ctx, "inv-zc")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.InvocationDeadLettered {
		t.Errorf("invocation record = %s; want dead_lettered (B's, with its DLQ entry): the zombie overwrote it", rec.Status)
	}
}
