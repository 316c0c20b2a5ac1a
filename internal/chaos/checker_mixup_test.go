package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twenty-second session): a stored result
// carrying another invocation's id is a violation (MisaddressedResults).
//
// The last stored result of invocation A carries invocation B's id (a
// worker published B's result on A's subject): A's user was handed another
// request's answer, and A's own ending is nowhere. The checker looks up A,
// gets a completed result and counts it, so B's one ending is counted for
// two requests and A, which has none of its own, was not lost.
func TestResultUnderAnotherInvocationsIDIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	ctx := context.Background()
	a, b := "chaos-review-mixup-a", "chaos-review-mixup-b"
	p.finish(t, b, envelope.StatusCompleted, "")
	p.refund(t, b, requestOrder(1), 12999)

	// A's subject holds B's result; A's record says completed as well.
	res := &envelope.Result{V: envelope.Version, InvocationID: b, Status: envelope.StatusCompleted, Content: "Refunded B's order"}
	data, err := res.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.h.js.Publish(ctx, envelope.ResultSubject(envelope.DefaultResultPrefix, a), data); err != nil {
		t.Fatal(err)
	}
	invs, err := redissession.NewInvocations(p.h.rdb, redissession.Config{Prefix: invocationPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := invs.Transition(ctx, &session.Invocation{ID: a, Status: session.InvocationRunning}); err != nil {
		t.Fatal(err)
	}
	if err := invs.Transition(ctx, &session.Invocation{ID: a, Status: session.InvocationCompleted, Result: data}); err != nil {
		t.Fatal(err)
	}
	p.refund(t, a, requestOrder(0), 12999)

	rep := p.check(t, []string{a, b}, true)
	t.Logf("final %v, lost %v, violations %q", rep.Final, rep.Lost, strings.Join(rep.Violations(), "; "))
	if rep.OK() {
		t.Errorf("invocation %s's stored result is invocation %s's (invocation_id %q), yet the run PASSES with %v completed and 0 lost",
			a, b, b, rep.Final)
	}
}

// Regression (found in review, twenty-second session): an invocation seen
// completed live whose last stored result is not completed is a
// contradiction.
//
// The live subscription saw the invocation complete; its last stored
// result (the live one missed, e.g. during the NATS restart) says
// dead_lettered CALL_BUDGET, a class the run's faults can produce and the
// replay leaves alone. "No completed result was followed by a different
// one" was checked only within the live history, never against the last
// stored result the checker holds, so the user told "completed" and then
// "stuck" passed.
func TestCompletedLiveThenOtherwiseStoredIsAContradiction(t *testing.T) {
	p := newProofCheck(t)
	p.h.cfg.ModelFaults = "malformed_function_call=0.1" // CALL_BUDGET is a class these faults end invocations with
	id := "chaos-review-contra-0"

	tr := newTracker([]string{id})
	tr.markSubmitted(id)
	tr.observe(&envelope.Result{V: envelope.Version, InvocationID: id, Status: envelope.StatusCompleted})

	deadLetterEntry(t, p, id, "CALL_BUDGET", false)
	p.finish(t, id, envelope.StatusDeadLettered, "CALL_BUDGET")

	rep := &Report{ReplayMode: "dlq-replayer replay"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.h.check(ctx, p.cl, tr, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("final %v, contradictions %v, violations %q", rep.Final, rep.Contradictions, strings.Join(rep.Violations(), "; "))
	if rep.OK() {
		t.Errorf("an invocation seen completed live whose last stored result is dead_lettered CALL_BUDGET PASSES (contradictions %v)",
			rep.Contradictions)
	}
}
