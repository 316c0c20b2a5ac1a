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
// on come back as error maps (the seed's getOrder).
func GetOrder(orders Orders) tool.Tool {
	return tool.MustFunc(GetOrderTool, "Look up an order by id.",
		func(ctx context.Context, a GetOrderArgs) (map[string]any, error) {
			o, err := orders.Get(ctx, a.OrderID)
			switch {
			case err == nil:
				return tool.OK(map[string]any{"order": o, "amount_cents": o.TotalCents - o.RefundedCents}), nil
			case errors.Is(err, ErrOrderNotFound):
				return tool.NotFound("Ask the user to check the order id."), nil
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
// one in the context, is passed to the orders service.
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

// Instruction is the support agent's system instruction.
const Instruction = "Answer billing questions using the tools provided. Look the order up before refunding it."
