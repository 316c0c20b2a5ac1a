package support_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// cancelOnHGet cancels the invocation (as the worker's drain timeout does
// with cancelRuns) while get_order's HGET is in flight.
type cancelOnHGet struct{ cancel context.CancelFunc }

func (h cancelOnHGet) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h cancelOnHGet) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h cancelOnHGet) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hget" {
			return next(ctx, cmd)
		}
		h.cancel()
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

// Regression (found in review, twentieth session): an invocation cancelled
// while get_order waits on Redis is "not the tool's failure" (runTool: no
// answer is made up for the model, a resumed invocation runs the call
// again). RedisOrders wrapped context.Canceled as ErrUnavailable, get_order
// answered {"reason":"orders_service_timeout"} with a nil error, and that
// made-up outage was stored as the call's response: the resumed invocation
// reused it and the model was told the orders service timed out.
func TestCancelledLookupRecordsNoAnswer(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	opts := *rdb.Options()
	opts.MaxRetries = -1
	c := redis.NewClient(&opts)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.AddHook(cancelOnHGet{cancel: cancel})

	m := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call(support.GetOrderTool, map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Text("ok")),
	)
	sessions := session.NewMemory()
	ag := &agent.Agent{Name: "support", Model: m, Instruction: support.Instruction,
		Tools: []tool.Tool{support.GetOrder(support.NewRedisOrders(c, prefix))}}
	r := &agent.Runner{Agent: ag, Sessions: sessions, Metrics: agent.NewMetrics(nil)}
	_, err := agenttest.Collect(r.Run(ctx, agent.RunRequest{InvocationID: "inv-1", UserID: "u", SessionID: "s",
		Message: model.NewTextContent(model.RoleUser, "where is A-1042")}))
	if err == nil {
		t.Fatal("precondition: the cancelled invocation completed")
	}
	s, gerr := sessions.Get(context.Background(), session.Key{App: "support", UserID: "u", SessionID: "s"})
	if gerr != nil {
		t.Fatal(gerr)
	}
	for _, ct := range agent.CompletedToolsOf(s.Events) {
		if ct.Name == support.GetOrderTool {
			t.Errorf("invocation cancelled during get_order (err %v), yet the session holds get_order's answer %v: "+
				"a resumed invocation reuses a made-up outage instead of looking the order up", err, ct.Response)
		}
	}
}
