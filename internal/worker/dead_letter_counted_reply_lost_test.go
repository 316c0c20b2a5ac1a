package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// Regression (found in review of this session's fix, twenty-fourth session): a dead letter was
// counted once its invocation record was written. A record write that was
// applied but whose reply was lost put the message back, the redelivery
// found the dead_lettered record and acked it as a duplicate, and the count
// was never taken: the DLQ held the CALL_BUDGET entry, the user was told
// "stuck", and the loop alert (agentfleet_loop_suspected_total) never
// fired. Each entry is counted when the DLQ stores it.

// lostReplyInvocations applies the first write of a dead letter's record
// and then reports a failure, as a Redis reply lost after the command ran
// does.
type lostReplyInvocations struct {
	session.InvocationStore
	lost atomic.Bool
}

func (s *lostReplyInvocations) Transition(ctx context.Context, rec *session.Invocation) error {
	err := s.InvocationStore.Transition(ctx, rec)
	if err == nil && rec.Status.Terminal() && rec.Status != session.InvocationCompleted && s.lost.CompareAndSwap(false, true) {
		return errors.New("test: reply lost (the write was applied)")
	}
	return err
}

func TestDeadLetterCountedWhenItsRecordReplyIsLost(t *testing.T) {
	e := newEnv(t)
	invs := &lostReplyInvocations{InvocationStore: e.invs}
	e.deps = func(d *worker.Deps) { d.Invocations = invs }
	var steps []agenttest.Step
	for range 6 {
		steps = append(steps, agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})))
	}
	ag := e.supportAgent(agenttest.NewScriptedModel(steps...))
	ag.MaxModelCalls = 2
	w := e.startWorker("w1", ag, worker.Config{InfraBackoffMax: time.Millisecond})
	const id = "inv-lost-record-reply"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.ErrorClass != "CALL_BUDGET" || !invs.lost.Load() {
		t.Fatalf("result %+v (reply lost: %v), want CALL_BUDGET", res, invs.lost.Load())
	}
	eventually(t, "the redelivery acked as a duplicate", func() bool { return e.pending() == 0 && w.count("support", "duplicate") == 1 })
	dl := testutilValue(w.metrics.DeadLetters.WithLabelValues("CALL_BUDGET", "support"))
	loop := testutilValue(w.metrics.LoopSuspects.WithLabelValues("support"))
	t.Logf("DLQ entries %d, dead letters counted %v, loop suspects counted %v", len(e.dlqEntries()), dl, loop)
	if len(e.dlqEntries()) != 1 || dl != 1 || loop != 1 {
		t.Errorf("one CALL_BUDGET dead letter in the DLQ counted %v times as a dead letter and %v times as a loop, want 1 and 1", dl, loop)
	}
}
