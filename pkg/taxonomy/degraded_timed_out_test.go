package taxonomy_test

import (
	"strings"
	"sync/atomic"
	"testing"
)

// Regression (found in review, eighteenth session): the seed's worked
// example once more, without the model's second try: the
// refund request went out and its reply did not come back in time, the
// tool-error callback answers the model {"reason":"timeout"} (the
// idempotency wrapper records outcome_unknown), and the very next model
// call fails with a 503 after retries. Whether the refund happened is
// unknown, exactly as in TestDegradedMessageDoesNotDenyAnEffectOfUnknownOutcome,
// but the degraded message only treats reason "outcome_unknown" as "may
// have gone through": a timeout map is read as "did not happen", so the
// user is told the request was not completed and to try again (a new
// request: a new invocation id, a new idempotency key, a second refund).
// A wrapped tool's timeout answers outcome_unknown
// (tool.ErrOutcomeUnknown), which CompletedTool.OutcomeUnknown reads.
func TestDegradedMessageDoesNotDenyATimedOutRefund(t *testing.T) {
	var ran atomic.Int32
	final := degradedAnswer(t, "inv-timeout", "Please refund order A-1042", timingOutRefund(&ran),
		refundA1042(),
		modelUnavailable(),
	)
	if ran.Load() != 1 {
		t.Fatalf("refund ran %d times, want 1", ran.Load())
	}
	if strings.HasPrefix(final, "Your request was not completed") || strings.Contains(final, "try again") ||
		!strings.Contains(final, "refund_order") {
		t.Fatalf("degraded message denies a refund whose request went out and timed out, and invites a second request: %q", final)
	}
	if strings.Count(final, "refund_order") != 1 || !strings.Contains(final, "may have gone through") {
		t.Fatalf("degraded message = %q, want the refund named once as one that may have gone through", final)
	}
}
