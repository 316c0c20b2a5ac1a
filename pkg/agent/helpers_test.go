package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

type fixture struct {
	model    *agenttest.ScriptedModel
	orders   *support.MemoryOrders
	sessions *session.Memory
	agent    *agent.Agent
	runner   *agent.Runner
	metrics  *agent.Metrics
}

func newFixture(t *testing.T, steps ...agenttest.Step) *fixture {
	t.Helper()
	f := &fixture{
		model:    agenttest.NewScriptedModel(steps...),
		orders:   support.NewMemoryOrders(support.DemoOrders()...),
		sessions: session.NewMemory(),
		metrics:  agent.NewMetrics(nil),
	}
	f.agent = &agent.Agent{
		Name:        "support",
		Model:       f.model,
		Instruction: support.Instruction,
		Tools:       []tool.Tool{support.GetOrder(f.orders), support.RefundOrder(f.orders, nil)},
	}
	f.runner = &agent.Runner{Agent: f.agent, Sessions: f.sessions, Metrics: f.metrics}
	return f
}

func (f *fixture) run(t *testing.T, invocationID, text string) ([]*session.Event, error) {
	t.Helper()
	return agenttest.Collect(f.runner.Run(context.Background(), agent.RunRequest{
		InvocationID: invocationID, UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, text),
	}))
}

func (f *fixture) session(t *testing.T) *session.Session {
	t.Helper()
	s, err := f.sessions.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func getOrder(id string) *model.Response {
	return agenttest.Call(support.GetOrderTool, map[string]any{"order_id": id})
}

func refund(id string, cents int, reason string) *model.Response {
	return agenttest.Call(support.RefundOrderTool, map[string]any{"order_id": id, "amount_cents": float64(cents), "reason": reason})
}

// failingTool is a tool whose Run is supplied by the test.
type failingTool struct {
	name string
	run  func(ctx context.Context, args map[string]any) (map[string]any, error)
}

func (f failingTool) Name() string        { return f.name }
func (f failingTool) Description() string { return "test tool" }
func (f failingTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: f.name, Description: "test tool"}
}
func (f failingTool) Run(ctx context.Context, args map[string]any) (map[string]any, error) {
	return f.run(ctx, args)
}
