package taxonomy_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, eighteenth session): A refund tool written as idempotency.ErrNotApplied documents it (and as
// the repository's own support.RefundOrder is): the orders service books a
// refund at most once per idempotency key, so the tool marks its unmapped
// errors ErrNotApplied when it has a key, and the wrapper releases the
// claim. The refund went out and was booked; its reply timed out. The
// wrapper does not mark this error tool.ErrOutcomeUnknown (it released the
// claim), so ClassifyToolError answers "timeout", and since commit 1890bd3
// CompletedTool.OutcomeUnknown is false for a "timeout" response. The next
// model call fails with a 503 after retries: the default degraded message
// tells the user "Your request was not completed ... Please try again",
// exactly the eighteenth session's bug the commit meant to fix: a new
// request is a new invocation id, a new idempotency key, and a second
// refund.
func TestDegradedMessageDoesNotDenyATimedOutRefundMarkedNotApplied(t *testing.T) {
	var booked atomic.Int32
	refund := tool.MustFunc("refund_order", "Refund an order.",
		func(ctx context.Context, a refundArgs) (map[string]any, error) {
			key, ok := idempotency.KeyFromContext(ctx)
			if !ok || key == "" {
				t.Errorf("no idempotency key in the tool's context")
			}
			booked.Add(1)                                                                 // the orders service books it under key...
			err := fmt.Errorf("orders service: reply lost: %w", context.DeadlineExceeded) // ...and the reply times out
			// As support.RefundOrder does with a key: running it again
			// under this key is harmless.
			return nil, fmt.Errorf("%w (%w)", err, idempotency.ErrNotApplied)
		})
	final := degradedAnswer(t, "inv-fix2-timeout", "Please refund order A-1042", wrapForSupport(refund),
		refundA1042(),
		modelUnavailable(),
	)
	if booked.Load() != 1 {
		t.Fatalf("refund booked %d times, want 1", booked.Load())
	}
	if strings.Contains(final, "was not completed") || strings.Contains(final, "try again") {
		t.Errorf("the degraded message denies a refund that was booked (its reply timed out) and invites a new request (a new idempotency key, a second refund): %q", final)
	}
}
