package support_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
)

func TestNATSOrdersRefundIsAnAtomicEffect(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := context.Background()
	o, err := support.NewNATSOrders(ctx, js, "")
	if err != nil {
		t.Fatal(err)
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
		t.Fatalf("records=%d refused=%d err=%v; want 12 and 8", len(rs), tooLarge, err)
	}
	got, err := o.Get(ctx, "A-1042")
	if err != nil || got.RefundedCents != 1200 {
		t.Fatalf("Get = %+v %v", got, err)
	}
}
