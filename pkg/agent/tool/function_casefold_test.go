package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type reviewRefundArgs struct {
	OrderID     string `json:"order_id"`
	AmountCents int    `json:"amount_cents"`
}

// Regression (found in review, sixteenth session): Func.Run's doc says "unknown fields are rejected as an
// *ArgumentError", and its declaration says additionalProperties: false.
// encoding/json matches object keys to fields case-insensitively (with
// Unicode simple folding: U+017F "ſ" folds to "s"), so DisallowUnknownFields
// lets "ORDER_ID" or "amount_centſ" through as the declared field, and a
// folded duplicate silently overrides the real one: here the arguments say
// amount_cents 1 (what an idempotency key over the arguments sees) and the
// tool runs with 99999.
func TestFuncRunRejectsCaseFoldedFieldNames(t *testing.T) {
	var ran []reviewRefundArgs
	f := tool.MustFunc("refund", "", func(_ context.Context, a reviewRefundArgs) (map[string]any, error) {
		ran = append(ran, a)
		return tool.OK(nil), nil
	})
	for _, args := range []map[string]any{
		{"ORDER_ID": "A-1042", "amount_cents": 100.0},
		{"order_id": "A-1042", "amount_cents": 1.0, "amount_centſ": 99999.0},
	} {
		ran = nil
		_, err := f.Run(context.Background(), args)
		if !errors.Is(err, tool.ErrInvalidArguments) {
			t.Errorf("Run(%v) = %v, ran with %+v; want an *ArgumentError for the undeclared key", args, err, ran)
		}
	}
}
