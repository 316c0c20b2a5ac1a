package support

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// lostAckKV stores every Create and Update, then fails it as the server's
// acknowledgement being lost would: with err, or, when err is nil, with
// the caller's context error once it ends.
type lostAckKV struct {
	jetstream.KeyValue
	err error
}

func (k lostAckKV) fail(ctx context.Context) error {
	if k.err != nil {
		return k.err
	}
	<-ctx.Done()
	return ctx.Err()
}

func (k lostAckKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if _, err := k.KeyValue.Create(ctx, key, value, opts...); err != nil {
		return 0, err
	}
	return 0, k.fail(ctx)
}

func (k lostAckKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if _, err := k.KeyValue.Update(ctx, key, value, rev); err != nil {
		return 0, err
	}
	return 0, k.fail(ctx)
}

// refusingKV fails every Create and Update with err, storing nothing.
type refusingKV struct {
	jetstream.KeyValue
	err error
}

func (k refusingKV) Create(context.Context, string, []byte, ...jetstream.KVCreateOpt) (uint64, error) {
	return 0, k.err
}

func (k refusingKV) Update(context.Context, string, []byte, uint64) (uint64, error) {
	return 0, k.err
}

// cancellingKV cancels the caller's invocation during every Get.
type cancellingKV struct {
	jetstream.KeyValue
	cancel context.CancelFunc
}

func (k cancellingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	k.cancel()
	<-ctx.Done()
	return nil, ctx.Err()
}

func newTestNATSOrders(t *testing.T) *NATSOrders {
	t.Helper()
	js, _, _ := natstest.JetStream(t)
	o, err := NewNATSOrders(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func bookedOf(t *testing.T, o *NATSOrders, orderID string) int {
	t.Helper()
	rs, err := o.Refunds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.OrderID == orderID {
			n++
		}
	}
	return n
}

// Regression (found in review, twentieth session): NATSOrders.Refund
// wrapped every failed KV Create or Update as ErrUnavailable, also one that
// timed out or lost its connection after the server stored the refund, so
// refund_order answered a booked refund as a plain retryable outage. Now it
// is ErrMayHaveApplied and refund_order says "may_have_acted"; a refund
// cut short by its context matches the context's error; a refusal by the
// server is still ErrUnavailable.
func TestNATSOrdersRefundWithLostAckMayHaveActed(t *testing.T) {
	ctx := context.Background()
	o := newTestNATSOrders(t)
	inner := o.kv

	o.kv = lostAckKV{KeyValue: inner, err: nats.ErrTimeout}
	err := o.Refund(ctx, Refund{InvocationID: "inv-1", OrderID: "A-1042", AmountCents: 500, IdempotencyKey: "k1"})
	if !errors.Is(err, ErrMayHaveApplied) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("refund stored, acknowledgement lost: err = %v, want ErrMayHaveApplied and not ErrUnavailable", err)
	}
	if n := bookedOf(t, o, "A-1042"); n != 1 {
		t.Fatalf("precondition: %d refunds booked, want 1", n)
	}

	// Through the tool, under the same key: the answer says it may have
	// acted, and a retry under the key books nothing more.
	refund := RefundOrder(o, func(context.Context) (string, bool) { return "k2", true })
	args := map[string]any{"order_id": "A-1043", "amount_cents": 100.0}
	res, err := refund.Run(ctx, args)
	if err != nil {
		t.Fatalf("refund_order: %v", err)
	}
	done := agent.CompletedTool{Name: RefundOrderTool, Args: args, Response: res}
	if !done.OutcomeUnknown() || !tool.IsRetryable(res) {
		t.Fatalf("refund_order answered %v: want may_have_acted (outcome unknown), retryable under its key", res)
	}
	o.kv = inner
	if res, err := refund.Run(ctx, args); err != nil || tool.IsErrorMap(res) {
		t.Fatalf("retry under the same key: %v, %v", res, err)
	}
	if n := bookedOf(t, o, "A-1043"); n != 1 {
		t.Fatalf("%d refunds of A-1043 booked after the retry, want 1", n)
	}

	// No key: not retryable, still may_have_acted.
	o.kv = lostAckKV{KeyValue: inner, err: nats.ErrConnectionClosed}
	res, err = RefundOrder(o, nil).Run(ctx, map[string]any{"order_id": "A-1044", "amount_cents": 100.0})
	if err != nil || tool.IsRetryable(res) || !(agent.CompletedTool{Response: res}).OutcomeUnknown() {
		t.Fatalf("refund_order without a key answered %v, %v: want a non-retryable may_have_acted map", res, err)
	}

	// The tool's deadline ends the call after the store: a Go error
	// matching the deadline and ErrMayHaveApplied.
	o.kv = lostAckKV{KeyValue: inner}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = o.Refund(dctx, Refund{InvocationID: "inv-1", OrderID: "A-1045", AmountCents: 100})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrMayHaveApplied) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("refund past its deadline: err = %v, want context.DeadlineExceeded and ErrMayHaveApplied", err)
	}

	// A refusal by the server stored nothing: a plain outage.
	o.kv = refusingKV{KeyValue: inner, err: &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "jetstream temporarily unavailable"}}
	err = o.Refund(ctx, Refund{InvocationID: "inv-1", OrderID: "A-1046", AmountCents: 100})
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrMayHaveApplied) {
		t.Fatalf("refund the server refused: err = %v, want ErrUnavailable only", err)
	}
}

// Regression (found in review, twentieth session): NATSOrders.load wrapped
// a cancelled invocation's context error as ErrUnavailable, and get_order
// answered it as an outage the loop stored as the call's response. Now it
// matches the context's error and get_order returns it as a Go error.
func TestNATSOrdersCancelledLookupIsNotAnOutage(t *testing.T) {
	o := newTestNATSOrders(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.kv = cancellingKV{KeyValue: o.kv, cancel: cancel}
	if _, err := o.Get(ctx, "A-1042"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get = %v, want context.Canceled and not ErrUnavailable", err)
	}
	res, err := GetOrder(o).Run(ctx, map[string]any{"order_id": "A-1042"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("get_order = %v, %v: want the context's error", res, err)
	}
}
