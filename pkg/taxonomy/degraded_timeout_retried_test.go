package taxonomy_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type lookupArgs struct {
	OrderID string `json:"order_id"`
}

// Regression (found in review, eighteenth session): CompletedTool.OutcomeUnknown is now true for a "timeout" response too,
// and the degraded message names calls that describe alike once, "as
// being checked when any of them is". ClassifyToolError answers a timeout
// with "you may try once more" (retryable), so the model retries, and a
// tool that is not wrapped (the read-only lookups, which the idempotency
// package says must not be wrapped) answers the retry. The degraded
// message then tells the user that a lookup which completed "may have gone
// through and is being checked", and asks them not to send the request
// again, though nothing is unknown and nothing is being checked. Before
// the change the same run said the lookup was completed and to try again.
func TestTimedOutCallThatSucceededOnRetryIsNotReportedAsBeingChecked(t *testing.T) {
	var runs atomic.Int32
	lookup := tool.MustFunc("get_order", "Look an order up.",
		func(ctx context.Context, a lookupArgs) (map[string]any, error) {
			if runs.Add(1) == 1 {
				return nil, fmt.Errorf("orders service: %w", context.DeadlineExceeded)
			}
			return tool.OK(map[string]any{"order_id": a.OrderID, "total_cents": 1299}), nil
		})
	args := map[string]any{"order_id": "A-1042"}
	final := degradedAnswer(t, "inv-lookup", "What did order A-1042 cost?", lookup,
		agenttest.Reply(agenttest.Call("get_order", args)),
		agenttest.Reply(agenttest.Call("get_order", args)), // "you may try once more"
		modelUnavailable(),
	)
	if runs.Load() != 2 {
		t.Fatalf("get_order ran %d times, want 2 (a timeout, then a successful retry)", runs.Load())
	}
	if strings.Contains(final, "may have gone through") || strings.Contains(final, "being checked") {
		t.Errorf("the degraded message says a lookup whose retry completed may have gone through and is being checked: %q", final)
	}
	if !strings.Contains(final, "was completed") {
		t.Errorf("the degraded message does not say the completed lookup was completed: %q", final)
	}
}

// Regression (found in review, eighteenth session): The same change for a read-only lookup that timed out and was not
// retried: nothing may have gone through (the idempotency package says
// read-only tools are not wrapped, and a wrapped tool's timeout is
// recorded as outcome_unknown, which the model is answered on a retry),
// yet the degraded message says the lookup "may have gone through and is
// being checked" and asks the user not to send the request again, so the
// question is never answered; before the change the user was told the
// request was not completed and to try again.
func TestTimedOutReadOnlyLookupIsNotReportedAsBeingChecked(t *testing.T) {
	lookup := tool.MustFunc("get_order", "Look an order up.",
		func(ctx context.Context, a lookupArgs) (map[string]any, error) {
			return nil, fmt.Errorf("orders service: %w", context.DeadlineExceeded)
		})
	final := degradedAnswer(t, "inv-lookup-2", "What did order A-1042 cost?", lookup,
		agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})),
		modelUnavailable(),
	)
	if strings.Contains(final, "may have gone through") || strings.Contains(final, "do not send the request again") {
		t.Errorf("a read-only lookup that timed out is reported as something that may have happened, and the user is told not to ask again: %q", final)
	}
}
