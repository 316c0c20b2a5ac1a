package support_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
)

func TestNATSOrdersRefundIsAnAtomicEffect(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	o, err := support.NewNATSOrders(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	testRefundIsAnAtomicEffect(t, o)
}

func TestNATSOrdersRefundHonoursTheIdempotencyKey(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	o, err := support.NewNATSOrders(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	testRefundHonoursTheIdempotencyKey(t, o)
}
