package support_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, twentieth session): a refund whose Redis
// reply is lost (the booking script ran, the connection dropped before its
// answer) came back from the shipped, wrapped refund_order as
// {"reason":"orders_service_timeout","retryable":true}: a plain outage,
// with nothing saying the refund may have gone through (no may_have_acted,
// not outcome_unknown). The loop's own timeout path (ClassifyToolError)
// marks exactly this case for a wrapped tool, but it never saw it: the tool
// turned the failure into an error map itself. The degraded message then
// left the refund out, and the model was told a retry "could help" as if
// nothing happened. Now RedisOrders returns ErrMayHaveApplied, refund_order
// sets may_have_acted, and CompletedTool.OutcomeUnknown honours it.
func TestRefundWithLostReplyMayHaveActed(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	p := redistest.NewReplyDropper(t, rdb.Options().Addr, "lost-reply-marker")
	opts := *rdb.Options()
	opts.Addr = p.Addr()
	opts.MaxRetries = -1 // as app.ConnectRedis configures the worker's client
	proxied := redis.NewClient(&opts)
	t.Cleanup(func() { proxied.Close() })
	ctx := context.Background()

	direct := support.NewRedisOrders(rdb, prefix)
	// Load the refund script, so the request whose reply is lost is an
	// EVALSHA that ran (not one answered NOSCRIPT).
	if err := direct.Refund(ctx, support.Refund{InvocationID: "warm", OrderID: "A-1001", AmountCents: 1}); err != nil {
		t.Fatal(err)
	}

	// The worker's wiring (app.SupportAgent): refund_order wrapped for
	// idempotency with key fields order_id and amount_cents.
	refund := idempotency.Wrap(support.RefundOrder(support.NewRedisOrders(proxied, prefix), idempotency.KeyFromContext),
		idempotency.NewMemory(), idempotency.Options{Agent: "support", KeyFields: support.RefundKeyFields})
	tctx := tool.WithContext(ctx, &tool.Context{InvocationID: "lost-reply-marker",
		Session: session.Key{App: "support", UserID: "u", SessionID: "s"}, FunctionCallID: "call-1"})
	args := map[string]any{"order_id": "A-1042", "amount_cents": 500.0, "reason": "damaged"}
	res, err := refund.Run(tctx, args)
	if !p.Dropped() {
		t.Fatal("precondition: no reply was dropped")
	}
	rs, rerr := direct.Refunds(ctx)
	if rerr != nil {
		t.Fatal(rerr)
	}
	booked := 0
	for _, r := range rs {
		if r.OrderID == "A-1042" {
			booked++
		}
	}
	if booked != 1 {
		t.Fatalf("precondition: %d refunds of A-1042 booked, want 1 (the script ran)", booked)
	}
	if err != nil {
		return // escalated or marked as an error: not a plain outage answer
	}
	done := agent.CompletedTool{CallID: "call-1", Name: support.RefundOrderTool, Args: args, Response: res}
	if !done.OutcomeUnknown() && tool.IsErrorMap(res) {
		t.Errorf("the refund was booked, but refund_order answered %v: a plain retryable outage "+
			"(CompletedTool.OutcomeUnknown() = false, so the degraded message omits it and the model is not told it may have acted)", res)
	}
}
