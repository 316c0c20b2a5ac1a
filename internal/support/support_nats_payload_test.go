package support_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// Regression (found in review, twenty-second session): a refund the NATS
// client refuses before sending (nats.ErrMaxPayload, in natsNotApplied) is
// known not applied: ErrUnavailable, not ErrMayHaveApplied, and
// refund_order answers the plain retryable outage map without
// "may_have_acted" or a "may have gone through" hint. NATSOrders keeps
// every refund record of an order in one KV entry, rewritten on each
// refund; records are never trimmed (the load generator's order reset keeps
// them). Once an order's entry is close to the server's max payload, the
// next refund's Update is refused by the client before anything is sent
// (nats.ErrMaxPayload). natsNotApplied does not know that error, so the
// refund is reported as ErrMayHaveApplied and refund_order answers
// "may_have_acted": true ("the refund may have gone through"), although
// nothing was sent and nothing can ever be booked for that order.
func TestNATSRefundTooLargeForPayloadIsKnownNotApplied(t *testing.T) {
	ctx := context.Background()
	js, nc, _ := natstest.JetStream(t)
	o, err := support.NewNATSOrders(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, support.RefundsBucket)
	if err != nil {
		t.Fatal(err)
	}
	// A history of past refunds of A-1042 (as a long load run leaves it),
	// just under the max payload.
	max := int(nc.MaxPayload())
	type rec = support.Refund
	var st struct {
		RefundedCents int   `json:"refunded_cents"`
		Refunds       []rec `json:"refunds"`
	}
	key := "idem:support:refund_order:" + strings.Repeat("a", 64)
	one, _ := json.Marshal(rec{InvocationID: "load-000000", OrderID: "A-1042", AmountCents: 1299, IdempotencyKey: key})
	n := (max - 400) / (len(one) + 1)
	st.Refunds = make([]rec, n)
	for i := range st.Refunds {
		st.Refunds[i] = rec{InvocationID: fmt.Sprintf("load-%06d", i), OrderID: "A-1042", AmountCents: 1299, IdempotencyKey: key}
	}
	// Pad the first record so the entry is 60 bytes under the max payload:
	// it is stored, one more record is not.
	cur, _ := json.Marshal(st)
	st.Refunds[0].InvocationID += strings.Repeat("x", max-60-len(cur))
	b, _ := json.Marshal(st)
	if _, err := kv.Put(ctx, "order.A-1042", b); err != nil {
		t.Fatal(err)
	}

	err = o.Refund(ctx, support.Refund{InvocationID: "inv-1", OrderID: "A-1042", AmountCents: 100,
		IdempotencyKey: "idem:support:refund_order:" + strings.Repeat("b", 64)})
	if err == nil {
		t.Fatal("precondition: the refund was booked; the entry was expected to outgrow the max payload")
	}
	if errors.Is(err, support.ErrMayHaveApplied) || !errors.Is(err, support.ErrUnavailable) {
		t.Errorf("refund refused by the client before sending (%v): ErrMayHaveApplied=%v ErrUnavailable=%v; want known not applied (ErrUnavailable only)",
			err, errors.Is(err, support.ErrMayHaveApplied), errors.Is(err, support.ErrUnavailable))
	}

	// What the model hears.
	ctx = tool.WithContext(ctx, &tool.Context{InvocationID: "inv-2"})
	res, rerr := support.RefundOrder(o, nil).Run(ctx, map[string]any{"order_id": "A-1042", "amount_cents": 100.0})
	if rerr != nil {
		t.Fatal(rerr)
	}
	if acted, _ := res[tool.KeyMayHaveActed].(bool); acted {
		t.Errorf("refund_order answered %v: may_have_acted for a refund that was never sent", res)
	}
	// Not sent, so calling again is harmless: the outage map, no hint that
	// the refund may have gone through.
	if res["reason"] != "orders_service_timeout" || res["retryable"] != true {
		t.Errorf("refund_order answered %v; want reason orders_service_timeout, retryable", res)
	}
	if hint, ok := res["hint"]; ok {
		t.Errorf("refund_order answered hint %q for a refund that was never sent", hint)
	}
}
