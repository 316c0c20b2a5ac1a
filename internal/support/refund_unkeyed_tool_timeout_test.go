package support_test

import (
	"context"
	"strings"
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

// lateReplyHook runs every EVALSHA on the real server, then holds its
// reply until the caller's context ends.
type lateReplyHook struct{}

func (lateReplyHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (lateReplyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (lateReplyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
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

// Regression (found in review, twentieth session): an unkeyed
// refund_order (not wrapped, or no key in the context) whose booking ran
// and whose reply came after the ToolTimeout is marked tool.OutcomeUnknown
// by refundCutShort; ClassifyToolError answered it with its timeout map,
// "retryable": true, "The tool timed out; you may try once more.". With no
// key a second call books a second refund. The same refund whose socket
// read timed out first (ErrMayHaveApplied without the context ending) is
// answered retryable false, "do not call refund_order again"; now the tool
// timeout is too.
func TestUnkeyedRefundCutShortByToolTimeoutIsNotRetryable(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	direct := support.NewRedisOrders(rdb, prefix)
	if err := direct.Refund(ctx, support.Refund{InvocationID: "warm", OrderID: "A-1001", AmountCents: 1}); err != nil {
		t.Fatal(err) // loads the script
	}
	opts := *rdb.Options()
	opts.MaxRetries = -1
	slow := redis.NewClient(&opts)
	t.Cleanup(func() { slow.Close() })
	slow.AddHook(lateReplyHook{})

	refund := support.RefundOrder(support.NewRedisOrders(slow, prefix), nil) // no idempotency key
	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call(support.RefundOrderTool, map[string]any{"order_id": "A-1042", "amount_cents": 500.0})),
		agenttest.Reply(agenttest.Text("ok")),
	)
	ag := &agent.Agent{
		Name: "support", Model: m, Instruction: support.Instruction,
		Tools:       []tool.Tool{refund},
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
	if tool.IsRetryable(resp) {
		t.Errorf("unkeyed refund_order booked, then cut short by the tool timeout, answered %v: retryable, "+
			"so the model calls it again and books a second refund (no key to stop it)", resp)
	}
	if acted, _ := resp[tool.KeyMayHaveActed].(bool); !acted {
		t.Errorf("answer %v: no may_have_acted for a refund that was booked", resp)
	}
	if hint, _ := resp["hint"].(string); !strings.Contains(hint, "do not call "+support.RefundOrderTool+" again") {
		t.Errorf("answer %v: the hint does not tell the model not to call %s again", resp, support.RefundOrderTool)
	}
}
