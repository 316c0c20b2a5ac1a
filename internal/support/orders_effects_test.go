package support_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
)

// effectOrders is an orders service whose refunds are recorded effects.
type effectOrders interface {
	support.Orders
	Refunds(ctx context.Context) ([]support.Refund, error)
}

// testRefundIsAnAtomicEffect runs 20 concurrent refunds of 100 cents
// against A-1042 (1299 cents): exactly 12 fit, each recorded once.
func testRefundIsAnAtomicEffect(t *testing.T, o effectOrders) {
	t.Helper()
	ctx := context.Background()
	got, err := o.Get(ctx, "A-1042")
	if err != nil || got.TotalCents != 1299 || got.RefundedCents != 0 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	tooLarge := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1042", AmountCents: 100})
			if errors.Is(err, support.ErrAmountTooLarge) {
				mu.Lock()
				tooLarge++
				mu.Unlock()
			} else if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rs, err := o.Refunds(ctx)
	if err != nil || len(rs) != 12 || tooLarge != 8 {
		t.Fatalf("refund records = %d (err %v), refused = %d; want 12 and 8", len(rs), err, tooLarge)
	}
	if rs[0].OrderID != "A-1042" || rs[0].AmountCents != 100 || rs[0].InvocationID != "i" {
		t.Fatalf("record = %+v", rs[0])
	}
	got, err = o.Get(ctx, "A-1042")
	if err != nil || got.RefundedCents != 1200 {
		t.Fatalf("refunded = %+v, %v", got, err)
	}
	if _, err := o.Get(ctx, "A-9999"); !errors.Is(err, support.ErrOrderNotFound) {
		t.Fatalf("missing order: %v", err)
	}
}
