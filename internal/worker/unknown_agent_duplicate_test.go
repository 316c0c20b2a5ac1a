package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (left open in the twenty-third session, fixed in the
// twenty-fourth): a redelivered duplicate of a completed invocation that
// reached a worker without its agent (a mixed fleet) was refused as
// BAD_INPUT ("unknown agent"): a BAD_INPUT dead letter was written and a
// "failed" result was published over the stored "completed" one, so a
// producer looking the answer up was told its finished request failed (a
// variant of "the request is checked before the record"). The stored
// outcome wins now, whatever worker gets the duplicate; a request no record
// knows is refused, and one that must run (a replay) is put back for a
// worker that runs its agent (unknown_agent_record_put_back_test.go).

// lastResult is the last result the results stream holds for id.
func (e *env) lastResult(id string) *envelope.Result {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject(id))
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := envelope.DecodeResult(m.Data)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// publishCopy publishes r again as a new message (no Nats-Msg-Id, so the
// requests stream's duplicate window does not drop it), as a redelivery
// after a lost ack or a producer's resend reaches the fleet.
func (e *env) publishCopy(r *envelope.Request, hdr map[string]string) {
	e.t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publishRaw(e.sc.RequestSubject(r.Agent), data, "", hdr)
}

// billingWorker starts a worker that runs only the "billing" agent, on the
// same consumer as the support workers: a mixed fleet.
func (e *env) billingWorker(name string) *running {
	ag := e.supportAgent(agenttest.NewScriptedModel())
	ag.Name = "billing"
	return e.startWorker(name, ag, worker.Config{})
}

func TestDuplicateOfACompletedInvocationOnAWorkerWithoutItsAgent(t *testing.T) {
	e := newEnv(t)
	w1 := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("refunded")))), worker.Config{})
	req := request("inv-mixed", "s-mixed", "refund my order")
	e.publish(req, nil)
	if res := e.await("inv-mixed"); res.Status != envelope.StatusCompleted {
		t.Fatalf("precondition: %s %s", res.Status, res.ErrorClass)
	}
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	w1.shutdown(t)

	w2 := e.billingWorker("w2")
	e.publishCopy(req, nil)
	eventually(t, "the duplicate handled", func() bool {
		return e.pending() == 0 && w2.count("_unknown", "duplicate")+w2.count("_unknown", "bad_input") > 0
	})
	last := e.lastResult("inv-mixed")
	t.Logf("duplicate on a worker without the agent: duplicate=%v bad_input=%v; DLQ entries %d; last result %s %s %q",
		w2.count("_unknown", "duplicate"), w2.count("_unknown", "bad_input"), len(e.dlqEntries()), last.Status, last.ErrorClass, last.Content)
	if last.Status != envelope.StatusCompleted || last.Content != "refunded" {
		t.Errorf("the last result is %s %s %q, want the stored completed answer", last.Status, last.ErrorClass, last.Content)
	}
	if n := len(e.dlqEntries()); n != 0 {
		t.Errorf("%d DLQ entries, want none: the invocation completed", n)
	}
	if w2.count("_unknown", "duplicate") != 1 || w2.count("_unknown", "bad_input") != 0 {
		t.Errorf("duplicate=%v bad_input=%v, want the duplicate acked as one", w2.count("_unknown", "duplicate"), w2.count("_unknown", "bad_input"))
	}

	// A request no record answers is still refused there.
	e.publish(request("inv-new", "s-new", "hi"), nil)
	if res := e.await("inv-new"); res.Status != envelope.StatusFailed || res.ErrorClass != string(taxonomy.BadInput) {
		t.Errorf("a new request for an agent the worker does not run: %s %s, want failed BAD_INPUT", res.Status, res.ErrorClass)
	}
}

// A duplicate of a dead-lettered invocation is answered from its record
// too, under the session's lock (a replay running elsewhere holds it: the
// duplicate waits rather than re-publish the older result over the
// replay's); a replay of it, which must run, is refused as before.
func TestDuplicateOfADeadLetterOnAWorkerWithoutItsAgent(t *testing.T) {
	e := newEnv(t)
	w1 := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(agenttest.Fail(errors.New("provider said no")))), worker.Config{})
	req := request("inv-dl", "s-dl", "refund my order")
	e.publish(req, nil)
	first := e.await("inv-dl")
	if first.Status != envelope.StatusDeadLettered && first.Status != envelope.StatusFailed {
		t.Fatalf("precondition: %s %s, want a dead letter", first.Status, first.ErrorClass)
	}
	eventually(t, "the request acked", func() bool { return e.pending() == 0 })
	w1.shutdown(t)
	entries := len(e.dlqEntries())

	ctx := context.Background()
	key := session.Key{App: "support", UserID: req.UserID, SessionID: req.SessionID}
	if _, err := e.locker.Acquire(ctx, key, "a-replay-elsewhere", time.Minute); err != nil {
		t.Fatal(err)
	}
	w2 := e.billingWorker("w2")
	e.publishCopy(req, nil)
	eventually(t, "the duplicate handled or put back", func() bool {
		return w2.count("_unknown", "nak_busy")+w2.count("_unknown", "duplicate")+w2.count("_unknown", "bad_input") > 0
	})
	if w2.count("_unknown", "nak_busy") == 0 {
		t.Errorf("duplicate=%v bad_input=%v while the session was held, want it put back (nak_busy)", w2.count("_unknown", "duplicate"), w2.count("_unknown", "bad_input"))
	}
	if err := e.locker.Release(ctx, key, "a-replay-elsewhere"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the duplicate handled", func() bool {
		return e.pending() == 0 && w2.count("_unknown", "duplicate")+w2.count("_unknown", "bad_input") > 0
	})
	last := e.lastResult("inv-dl")
	t.Logf("nak_busy=%v duplicate=%v bad_input=%v; DLQ entries %d (were %d); last result %s %s",
		w2.count("_unknown", "nak_busy"), w2.count("_unknown", "duplicate"), w2.count("_unknown", "bad_input"), len(e.dlqEntries()), entries, last.Status, last.ErrorClass)
	if last.Status != first.Status || last.ErrorClass != first.ErrorClass || last.UserMessage != first.UserMessage {
		t.Errorf("the last result is %s %s %q, want the stored %s %s %q", last.Status, last.ErrorClass, last.UserMessage, first.Status, first.ErrorClass, first.UserMessage)
	}
	if n := len(e.dlqEntries()); n != entries || w2.count("_unknown", "duplicate") != 1 {
		t.Errorf("%d DLQ entries (were %d), duplicate=%v: want the duplicate acked, no new entry", n, entries, w2.count("_unknown", "duplicate"))
	}

	// A replay must run: this worker cannot. It puts it back for a worker
	// that can (the record shows the fleet ran the agent), and refuses it
	// on its MaxDeliveries-th delivery (5 here), since none took it
	// (changed in review of this session's fix: it was refused at once).
	e.publishCopy(req, map[string]string{envelope.HeaderReplayCount: "1"})
	eventually(t, "the replay refused", func() bool { return w2.count("_unknown", "bad_input") == 1 && e.pending() == 0 })
	if n := w2.count("_unknown", "nak_no_agent"); n != 4 {
		t.Errorf("the replay was put back %v times before it was refused, want 4", n)
	}
}
