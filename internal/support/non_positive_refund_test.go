package support_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
)

// Regression (found in review, sixteenth session): TestOrdersServiceRefusesNonPositiveRefunds: the orders services'
// own amount check (refund <= refundable) is bypassed by a negative
// amount: it books a "refund" of -1000 cents that lowers refunded_cents,
// after which a refund larger than the order total passes the check.
// Only the refund_order tool rejects amount_cents <= 0; the service every
// caller (the tool, loadgen's minimal consumer) relies on does not.
func TestOrdersServiceRefusesNonPositiveRefunds(t *testing.T) {
	services := everyOrdersService()
	for _, name := range []string{"memory", "redis", "nats-kv"} {
		t.Run(name, func(t *testing.T) {
			o := services[name](t)
			ctx := context.Background()
			// A-1001 totals 1013 cents.
			errNeg := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1001", AmountCents: -1000})
			errZero := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1001", AmountCents: 0})
			errBig := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1001", AmountCents: 2013})
			g, err := o.Get(ctx, "A-1001")
			if err != nil {
				t.Fatal(err)
			}
			rs, _ := o.Refunds(ctx)
			if errNeg == nil || errZero == nil || errBig == nil || g.RefundedCents > g.TotalCents || g.RefundedCents < 0 || len(rs) != 0 {
				t.Errorf("%s: Refund(-1000) = %v, Refund(0) = %v, then Refund(2013) = %v; order %s refunded %d of %d cents, %d records; want all refused and nothing booked",
					name, errNeg, errZero, errBig, g.ID, g.RefundedCents, g.TotalCents, len(rs))
			}
		})
	}
}
