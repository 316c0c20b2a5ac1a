package support_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
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

// testRefundHonoursTheIdempotencyKey: a refund made again under the same
// idempotency key (its first reply was lost, the tool said retry) books
// nothing more, concurrently too; another key books again; no key never
// deduplicates.
func testRefundHonoursTheIdempotencyKey(t *testing.T, o effectOrders) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1042", AmountCents: 100, IdempotencyKey: "idem:support:refund_order:k1"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := o.Refund(ctx, support.Refund{InvocationID: "i", OrderID: "A-1042", AmountCents: 100, IdempotencyKey: "idem:support:refund_order:k2"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := o.Refund(ctx, support.Refund{InvocationID: "j", OrderID: "A-1042", AmountCents: 100}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := o.Refunds(ctx)
	if err != nil || len(rs) != 4 {
		t.Fatalf("refund records = %d (%v), want 4: one per key and both keyless", len(rs), err)
	}
	if got, err := o.Get(ctx, "A-1042"); err != nil || got.RefundedCents != 400 {
		t.Fatalf("refunded = %+v, %v; want 400", got, err)
	}
}

// everyOrdersService opens, per test, each backend of the orders service
// with the demo orders: memory, Redis (a key prefix of its own) and NATS
// KV (an embedded server of its own).
func everyOrdersService() map[string]func(t *testing.T) effectOrders {
	return map[string]func(t *testing.T) effectOrders{
		"memory": func(t *testing.T) effectOrders {
			return memoryEffects{support.NewMemoryOrders(support.DemoOrders()...)}
		},
		"redis": func(t *testing.T) effectOrders {
			c, prefix := redistest.Client(t)
			return support.NewRedisOrders(c, prefix)
		},
		"nats-kv": func(t *testing.T) effectOrders {
			js, _, _ := natstest.JetStream(t)
			o, err := support.NewNATSOrders(context.Background(), js, "")
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
	}
}

// memoryEffects adapts MemoryOrders.Refunds to effectOrders.
type memoryEffects struct{ *support.MemoryOrders }

func (m memoryEffects) Refunds(context.Context) ([]support.Refund, error) {
	return m.MemoryOrders.Refunds(), nil
}

func TestMemoryOrdersRefundHonoursTheIdempotencyKey(t *testing.T) {
	testRefundHonoursTheIdempotencyKey(t, memoryEffects{support.NewMemoryOrders(support.DemoOrders()...)})
}
