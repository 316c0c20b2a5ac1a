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

// refundWithLateReply runs one invocation whose refund_order (made by
// makeRefund over Redis orders whose booking runs and answers only after
// the caller's context ended) the agent's ToolTimeout cuts short, with
// args as the model's call. It checks that exactly one refund of A-1042
// was booked and returns refund_order's answer to the model.
func refundWithLateReply(t *testing.T, makeRefund func(support.Orders) tool.Tool, args map[string]any) map[string]any {
	t.Helper()
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

	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call(support.RefundOrderTool, args)),
		agenttest.Reply(agenttest.Text("ok")),
	)
	ag := &agent.Agent{
		Name: "support", Model: m, Instruction: support.Instruction,
		Tools:       []tool.Tool{support.GetOrder(direct), makeRefund(support.NewRedisOrders(slow, prefix))},
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
	return agenttest.ResponseFor(t, events, support.RefundOrderTool)
}
