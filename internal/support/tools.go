package support

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Tool names.
const (
	GetOrderTool    = "get_order"
	RefundOrderTool = "refund_order"
)

// RefundKeyFields are the arguments that identify a refund for idempotency:
// the order and the amount, not the free-text reason a model may rephrase.
var RefundKeyFields = []string{"order_id", "amount_cents"}

// GetOrderArgs are get_order's arguments.
type GetOrderArgs struct {
	OrderID string `json:"order_id" jsonschema:"Order id, e.g. A-1042"` // OrderID is the order to look up.
}

// RefundOrderArgs are refund_order's arguments.
type RefundOrderArgs struct {
	OrderID     string `json:"order_id" jsonschema:"Order id, e.g. A-1042"`                   // OrderID is the order to refund.
	AmountCents int    `json:"amount_cents" jsonschema:"Amount to refund, in cents"`          // AmountCents is the amount to refund, in cents.
	Reason      string `json:"reason,omitempty" jsonschema:"Why the customer wants a refund"` // Reason is the customer's reason (not part of the idempotency key).
}

// GetOrder returns the read-only get_order tool. Failures the model can act
// on come back as error maps (the seed's getOrder); a lookup whose context
// ended is a Go error, not an outage.
func GetOrder(orders Orders) tool.Tool {
	return tool.MustFunc(GetOrderTool, "Look up an order by id.",
		func(ctx context.Context, a GetOrderArgs) (map[string]any, error) {
			o, err := orders.Get(ctx, a.OrderID)
			switch {
			case err == nil:
				return tool.OK(map[string]any{"order": o, "amount_cents": o.TotalCents - o.RefundedCents}), nil
			case errors.Is(err, ErrOrderNotFound):
				return tool.NotFound("Ask the user to check the order id."), nil
			case ctxEnded(ctx) != nil:
				// The invocation was cancelled or the call timed out: a
				// Go error, so the loop records no made-up outage as the
				// call's answer (a resumed invocation looks the order up
				// again) or answers its own timeout map. Found in review,
				// twentieth session.
				return nil, err
			case errors.Is(err, ErrUnavailable):
				return tool.Error("orders_service_timeout", true, ""), nil
			case errors.Is(err, ErrNotAuthorised):
				return tool.Error("not_authorised", false, ""), nil
			default:
				return nil, err
			}
		})
}

// RefundOrder returns the write tool refund_order. It is an effect: wrap it
// with pkg/idempotency (key fields RefundKeyFields) wherever redelivery,
// crashes or replays can happen. The idempotency key, when the wrapper put
// one in the context, is passed to the orders service. A refund whose
// request went out without an answer coming back (ErrMayHaveApplied) is
// answered with "may_have_acted": true, retryable only under a key; one
// whose context ended is a Go error, for the loop to treat as interrupted
// or timed out.
func RefundOrder(orders Orders, keyFromContext func(context.Context) (string, bool)) tool.Tool {
	return tool.MustFunc(RefundOrderTool, "Refund part or all of an order.",
		func(ctx context.Context, a RefundOrderArgs) (map[string]any, error) {
			if a.AmountCents <= 0 {
				return nil, &tool.ArgumentError{Tool: RefundOrderTool, Detail: "amount_cents must be positive"}
			}
			r := Refund{OrderID: a.OrderID, AmountCents: a.AmountCents}
			if tc := tool.FromContext(ctx); tc != nil {
				r.InvocationID = tc.InvocationID
			}
			if keyFromContext != nil {
				r.IdempotencyKey, _ = keyFromContext(ctx)
			}
			err := orders.Refund(ctx, r)
			switch {
			case err == nil:
				return tool.OK(map[string]any{"order_id": a.OrderID, "refunded_cents": a.AmountCents}), nil
			case errors.Is(err, ErrOrderNotFound):
				return tool.NotFound("Ask the user to check the order id."), nil
			case errors.Is(err, ErrAmountTooLarge):
				return tool.Error("amount_exceeds_refundable", false, "Check the order total with get_order."), nil
			case ctxEnded(ctx) != nil:
				// Cut short by the invocation's end or the tool's
				// timeout: a Go error, so the loop decides (an interrupted
				// call runs again when the invocation resumes; a timeout
				// of this effectful tool answers "may_have_acted").
				return nil, refundCutShort(err, r.IdempotencyKey)
			case errors.Is(err, ErrMayHaveApplied):
				// The request went out and its answer was lost: the refund
				// may have been booked. Under a key, calling again is
				// harmless and tells (the service books a key once); with
				// none, it could refund twice. Found in review, twentieth
				// session: this was a plain retryable outage, and the
				// degraded answer left the refund out.
				keyed := r.IdempotencyKey != ""
				hint := "The refund may have gone through; do not call refund_order again. Tell the user it is being checked."
				if keyed {
					hint = "The refund may have gone through; calling refund_order again with the same arguments is safe and tells whether it did."
				}
				m := tool.Error("orders_service_timeout", keyed, hint)
				m[tool.KeyMayHaveActed] = true
				return m, nil
			case errors.Is(err, ErrUnavailable):
				return tool.Error("orders_service_timeout", true, ""), nil
			case errors.Is(err, ErrNotAuthorised):
				return tool.Error("not_authorised", false, ""), nil
			case r.IdempotencyKey != "":
				// Every Orders implementation books a refund at most once
				// per idempotency key, so running this call again is
				// harmless: the wrapper may release the claim.
				return nil, fmt.Errorf("%w (%w)", err, idempotency.ErrNotApplied)
			default:
				return nil, err
			}
		})
}

// refundCutShort is the Go error refund_order returns for a refund whose
// ctx ended. Under an idempotency key it is marked idempotency.ErrNotApplied
// (the wrapper releases the claim: the service books a key once, so a
// resumed or retried call asks it again and learns whether the refund was
// booked). With no key, a refund that may have been applied is marked
// tool.ErrOutcomeUnknown, so a timeout answers the model "may_have_acted"
// and, when the tool is not wrapped for idempotency, not retryable
// (agent.ClassifyToolError).
func refundCutShort(err error, key string) error {
	switch {
	case key != "":
		return fmt.Errorf("%w (%w)", err, idempotency.ErrNotApplied)
	case errors.Is(err, ErrMayHaveApplied):
		return tool.OutcomeUnknown(err)
	default:
		return err
	}
}

// Instruction is the support agent's system instruction.
const Instruction = "Answer billing questions using the tools provided. Look the order up before refunding it."
