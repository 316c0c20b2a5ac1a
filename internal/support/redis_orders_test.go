package support_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
)

func TestRedisOrdersRefundIsAnAtomicEffect(t *testing.T) {
	c, prefix := redistest.Client(t)
	o := support.NewRedisOrders(c, prefix)
	ctx := context.Background()
	got, err := o.Get(ctx, "A-1042")
	if err != nil || got.TotalCents != 1299 || got.RefundedCents != 0 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	// 20 concurrent refunds of 100 against 1299 cents: exactly 12 fit.
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
	got, _ = o.Get(ctx, "A-1042")
	if got.RefundedCents != 1200 {
		t.Fatalf("refunded = %d", got.RefundedCents)
	}
	if _, err := o.Get(ctx, "A-9999"); !errors.Is(err, support.ErrOrderNotFound) {
		t.Fatalf("missing order: %v", err)
	}
}

func TestRedisOrdersDownIsUnavailable(t *testing.T) {
	down := support.NewRedisOrders(closedClient(t), "x:")
	if err := down.Refund(context.Background(), support.Refund{OrderID: "A-1042", AmountCents: 1}); !errors.Is(err, support.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
