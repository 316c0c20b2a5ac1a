package taxonomy_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
)

// The seed's worked example: refundOrder had already run when the next
// model call failed, "so the fallback wrongly said nothing was completed".
// Here the refund's downstream call went out and timed out: the idempotency
// wrapper stores the outcome_unknown error map ("The tool failed after it
// may have acted ... Tell the user it is being checked"), the tool-error
// callback tells the model to try once more, and the second call answers
// outcome_unknown from the record (the app's wiring). The next model call
// fails with a 503 after retries. The degraded message told the user "Your
// request was not completed ... Please try again", inviting a new request
// (a new invocation id, hence a new idempotency key and a second refund);
// it now names the refund as being checked, once, and asks not to repeat.
func TestDegradedMessageDoesNotDenyAnEffectOfUnknownOutcome(t *testing.T) {
	var ran atomic.Int32
	// The refund request goes out; its reply does not come back in time.
	events := runDegraded(t, "inv-unknown-outcome", "Please refund order A-1042", timingOutRefund(&ran),
		refundA1042(),
		// "The tool timed out; you may try once more": the wrapper answers
		// from its record this time.
		refundA1042(),
		modelUnavailable(),
	)
	if ran.Load() != 1 {
		t.Fatalf("refund ran %d times", ran.Load())
	}
	var resp map[string]any
	for _, e := range events {
		for _, fr := range e.FunctionResponses() {
			resp = fr.Response
		}
	}
	if resp["reason"] != "outcome_unknown" {
		t.Fatalf("tool response = %v, want the outcome_unknown map", resp)
	}
	final := agenttest.FinalText(events)
	if strings.HasPrefix(final, "Your request was not completed") || !strings.Contains(final, "refund_order") {
		t.Fatalf("degraded message denies a refund that may have happened: %q", final)
	}
	if strings.Count(final, "refund_order") != 1 || !strings.Contains(final, "being checked") ||
		strings.Contains(final, "try again") {
		t.Fatalf("degraded message = %q, want the refund named once as being checked, and no invitation to try again", final)
	}
}
