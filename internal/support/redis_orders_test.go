package support_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
)

func TestRedisOrdersRefundIsAnAtomicEffect(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			c, prefix := kind.New(t)
			testRefundIsAnAtomicEffect(t, support.NewRedisOrders(c, prefix))
		})
	}
}

func TestRedisOrdersRefundHonoursTheIdempotencyKey(t *testing.T) {
	for _, kind := range redistest.Kinds() {
		t.Run(kind.Name, func(t *testing.T) {
			c, prefix := kind.New(t)
			testRefundHonoursTheIdempotencyKey(t, support.NewRedisOrders(c, prefix))
		})
	}
}

func TestRedisOrdersDownIsUnavailable(t *testing.T) {
	down := support.NewRedisOrders(closedClient(t), "x:")
	if err := down.Refund(context.Background(), support.Refund{OrderID: "A-1042", AmountCents: 1}); !errors.Is(err, support.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}
