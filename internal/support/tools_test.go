package support_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// brokenOrders fails every refund with an error the tool does not map.
type brokenOrders struct{ support.Orders }

func (brokenOrders) Refund(context.Context, support.Refund) error {
	return errors.New("connection reset by peer")
}

// refund_order's unmapped errors say "not applied" (ErrNotApplied) only when
// the call carries an idempotency key, by which every Orders implementation
// books at most once: then a retry is harmless and the wrapper may release
// the claim. Without a key the outcome stays unknown.
func TestRefundOrderErrorIsNotAppliedOnlyWithAKey(t *testing.T) {
	ctx := tool.WithContext(context.Background(), &tool.Context{InvocationID: "inv-1"})
	args := map[string]any{"order_id": "A-1042", "amount_cents": 100}
	withKey := support.RefundOrder(brokenOrders{support.NewMemoryOrders(support.DemoOrders()...)},
		func(context.Context) (string, bool) { return "idem:support:refund_order:k", true })
	if _, err := withKey.Run(ctx, args); !errors.Is(err, idempotency.ErrNotApplied) {
		t.Fatalf("with a key: %v, want ErrNotApplied", err)
	}
	noKey := support.RefundOrder(brokenOrders{support.NewMemoryOrders(support.DemoOrders()...)}, nil)
	if _, err := noKey.Run(ctx, args); err == nil || errors.Is(err, idempotency.ErrNotApplied) {
		t.Fatalf("without a key: %v, want the error, not ErrNotApplied", err)
	}
}
