package support_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// TestHugeRefundIsRefusedByEveryOrdersService: A-1042 (1299 cents)
// with 1000 refunded has 299 left, so a refund_order of math.MaxInt64 cents
// must be refused (amount_exceeds_refundable) and book nothing, on every
// orders service. NATS KV adds the amount to the refunded total before
// comparing (st.RefundedCents+r.AmountCents > o.TotalCents): the sum
// overflows to a negative number, the check passes and the refund is booked.
func TestHugeRefundIsRefusedByEveryOrdersService(t *testing.T) {
	services := everyOrdersService()
	for name, open := range services {
		t.Run(name, func(t *testing.T) {
			o := open(t)
			ctx := tool.WithContext(context.Background(), &tool.Context{InvocationID: "inv-huge"})
			if err := o.Refund(ctx, support.Refund{InvocationID: "inv-huge", OrderID: "A-1042", AmountCents: 1000}); err != nil {
				t.Fatal(err)
			}
			refund := support.RefundOrder(o, nil)
			res, err := refund.Run(ctx, map[string]any{"order_id": "A-1042", "amount_cents": math.MaxInt64})
			if err != nil {
				t.Fatal(err)
			}
			if res["status"] == tool.StatusOK || res["reason"] != "amount_exceeds_refundable" {
				t.Errorf("refund_order of MaxInt64 cents with 299 left = %v, want amount_exceeds_refundable", res)
			}
			if err := o.Refund(ctx, support.Refund{InvocationID: "inv-huge", OrderID: "A-1042", AmountCents: math.MaxInt64 - 500}); !errors.Is(err, support.ErrAmountTooLarge) {
				t.Errorf("Refund(MaxInt64-500) = %v, want ErrAmountTooLarge", err)
			}
			rs, err := o.Refunds(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.Get(context.Background(), "A-1042")
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || got.RefundedCents != 1000 {
				t.Errorf("after the refused refunds: %d refund records, refunded_cents %d; want 1 and 1000", len(rs), got.RefundedCents)
			}
		})
	}
}

// A refund asked for again under a key the Redis orders service booked is
// not booked again, and is counted (RepeatsKey): the chaos soak reports
// those repeats, which got past the idempotency wrapper.
func TestRepeatUnderABookedKeyIsCounted(t *testing.T) {
	ctx := context.Background()
	c, prefix := redistest.Client(t)
	o := support.NewRedisOrders(c, prefix)
	rf := support.Refund{InvocationID: "inv-repeat", OrderID: "A-1042", AmountCents: 500, IdempotencyKey: "idem:k1"}
	for range 3 {
		if err := o.Refund(ctx, rf); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Refund(ctx, support.Refund{InvocationID: "inv-repeat", OrderID: "A-1042", AmountCents: 100, IdempotencyKey: "idem:k2"}); err != nil {
		t.Fatal(err)
	}
	rs, err := o.Refunds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Get(ctx, o.RepeatsKey()).Int()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || n != 2 {
		t.Fatalf("%d refund records and %d repeats counted, want 2 and 2 (one key asked for three times, another once)", len(rs), n)
	}
}
