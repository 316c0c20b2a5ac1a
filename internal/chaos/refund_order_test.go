package chaos

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): "Duplicated effects = 0"
// was checked as "at most one demo:refunds record per (invocation, order)",
// the order being the one the worker under test booked. Each chaos request
// asks for one refund of one order (newRequest: A-(1001+i%100)); a
// redelivery or resume whose refund goes to another order (a session mixed
// up with another invocation's, a model step run on the wrong conversation)
// is a second effect under a key the checker never compares, and a refund
// booked on an order the request never named is a wrong effect: both passed.
// Correct: at most one refund record per invocation, and on the order its
// request named (the checker knows it).
func TestSecondRefundOfAnotherOrderIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	id := "chaos-review-two-orders-0" // request 0: "Please refund order A-1001"
	p.finish(t, id, envelope.StatusCompleted, "")
	p.refund(t, id, "A-1001", 12999) // its refund
	p.refund(t, id, "A-1002", 4599)  // and a second one, of an order it never named

	rep := p.check(t, []string{id}, true)
	t.Logf("refunds %d, distinct pairs %d, duplicates %v, violations %q", rep.Refunds, rep.RefundPairs, rep.Duplicates,
		strings.Join(rep.Violations(), "; "))
	if rep.OK() {
		t.Errorf("one request that asked to refund A-1001 has %d refund records (A-1001 and A-1002), and the run PASSES", rep.Refunds)
	}
	if rep.Duplicates.N != 1 || rep.WrongOrderRefunds.N != 1 {
		t.Errorf("duplicates %v, wrong orders %v: want the invocation once in each", rep.Duplicates, rep.WrongOrderRefunds)
	}
}

// A single refund of the wrong order is a violation too, and a single
// refund of the right one is not.
func TestRefundOfAnOrderTheRequestDidNotNameIsAViolation(t *testing.T) {
	p := newProofCheck(t)
	ids := []string{"chaos-order-0", "chaos-order-1"} // A-1001 and A-1002
	for _, id := range ids {
		p.finish(t, id, envelope.StatusCompleted, "")
	}
	p.refund(t, ids[0], "A-1001", 12999) // right
	p.refund(t, ids[1], "A-1003", 4599)  // wrong
	rep := p.check(t, ids, true)
	if rep.WrongOrderRefunds.N != 1 || !strings.HasPrefix(rep.WrongOrderRefunds.Examples[0], ids[1]+" ") || rep.Duplicates.N != 0 {
		t.Errorf("wrong orders %v, duplicates %v: want %s's refund of A-1003 only", rep.WrongOrderRefunds, rep.Duplicates, ids[1])
	}
}
