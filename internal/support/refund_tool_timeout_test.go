package support_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// lateReply runs every EVALSHA on the real server and then holds its reply
// until the caller's context ends: the refund is booked, the answer comes
// after the tool's deadline.
type lateReply struct{}

func (lateReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lateReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (lateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() != "evalsha" || err != nil {
			return err
		}
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

// Regression (found in review, twentieth session): the agent's ToolTimeout
// ends a wrapped refund_order whose booking script ran on Redis; the loop
// (ClassifyToolError) answers a timeout of a wrapped tool with
// "may_have_acted": true (eighteenth session), so neither the model nor
// the degraded message says the refund did not happen. The shipped tool
// never let the loop see the timeout: RedisOrders wrapped the context's
// deadline as ErrUnavailable and refund_order returned
// {"reason":"orders_service_timeout","retryable":true} with a nil error.
func TestRefundToolTimeoutAfterBookingMayHaveActed(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	direct := support.NewRedisOrders(rdb, prefix)
	if err := direct.Refund(ctx, support.Refund{InvocationID: "warm", OrderID: "A-1001", AmountCents: 1}); err != nil {
		t.Fatal(err) // loads the script: the slow call below is an EVALSHA that runs
	}
	opts := *rdb.Options()
	opts.MaxRetries = -1
	slow := redis.NewClient(&opts)
	t.Cleanup(func() { slow.Close() })
	slow.AddHook(lateReply{})

	refund := idempotency.Wrap(support.RefundOrder(support.NewRedisOrders(slow, prefix), idempotency.KeyFromContext),
		idempotency.NewMemory(), idempotency.Options{Agent: "support", KeyFields: support.RefundKeyFields})
	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call(support.RefundOrderTool, map[string]any{"order_id": "A-1042", "amount_cents": 500.0, "reason": "damaged"})),
		agenttest.Reply(agenttest.Text("ok")),
	)
	ag := &agent.Agent{
		Name: "support", Model: m, Instruction: support.Instruction,
		Tools:       []tool.Tool{support.GetOrder(direct), refund},
		ToolTimeout: 100 * time.Millisecond,
		Callbacks:   agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{agent.ClassifyToolError()}},
	}
	r := &agent.Runner{Agent: ag, Sessions: session.NewMemory(), Metrics: agent.NewMetrics(nil)}
	events, err := agenttest.Collect(r.Run(ctx, agent.RunRequest{InvocationID: "inv-1", UserID: "u", SessionID: "s",
		Message: model.NewTextContent(model.RoleUser, "refund 5 euros on A-1042")}))
	if err != nil {
		t.Fatalf("invocation: %v", err)
	}
	rs, err := direct.Refunds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	booked := 0
	for _, rf := range rs {
		if rf.OrderID == "A-1042" {
			booked++
		}
	}
	if booked != 1 {
		t.Fatalf("precondition: %d refunds of A-1042 booked, want 1", booked)
	}
	resp := agenttest.ResponseFor(t, events, support.RefundOrderTool)
	done := agent.CompletedTool{Name: support.RefundOrderTool, Response: resp}
	if !done.OutcomeUnknown() {
		t.Errorf("refund_order timed out after booking, answered %v: no may_have_acted / outcome_unknown "+
			"(a wrapped tool's timeout gets may_have_acted from ClassifyToolError)", resp)
	}
}
