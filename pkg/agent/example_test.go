package agent_test

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
)

// A support agent looks an order up, refunds it and answers. The scripted
// model stands in for a provider; the loop, tools and session are real.
func ExampleRunner_Run() {
	orders := support.NewMemoryOrders(support.Order{ID: "A-1042", TotalCents: 1299})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Call("refund_order", map[string]any{"order_id": "A-1042", "amount_cents": 1299})),
		agenttest.Reply(agenttest.Text("Refunded 12.99 for order A-1042.")),
	)
	r := &agent.Runner{
		Agent: &agent.Agent{
			Name:          "support",
			Model:         llm,
			Instruction:   support.Instruction,
			Tools:         []tool.Tool{support.GetOrder(orders), support.RefundOrder(orders, nil)},
			MaxModelCalls: 12,
		},
		Sessions: session.NewMemory(),
	}
	for ev, err := range r.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "Please refund order A-1042"),
	}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, fc := range ev.FunctionCalls() {
			fmt.Println("call:", fc.Name)
		}
		for _, fr := range ev.FunctionResponses() {
			fmt.Println("result:", fr.Name, fr.Response["status"])
		}
		if ev.IsFinalResponse() {
			fmt.Println("final:", ev.Content.Text())
		}
	}
	fmt.Println("refunds executed:", len(orders.Refunds()))
	// Output:
	// call: get_order
	// result: get_order ok
	// call: refund_order
	// result: refund_order ok
	// final: Refunded 12.99 for order A-1042.
	// refunds executed: 1
}

// A tool failure the model can act on becomes a small error map; the
// ready-made ClassifyToolError callback converts timeouts.
func ExampleClassifyToolError() {
	slow := tool.MustFunc("get_eta", "Estimated delivery time.",
		func(ctx context.Context, _ struct{}) (map[string]any, error) {
			return nil, fmt.Errorf("carrier API: %w", context.DeadlineExceeded)
		})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("get_eta", nil)),
		agenttest.Reply(agenttest.Text("The carrier is slow right now; try again soon.")),
	)
	r := &agent.Runner{
		Agent: &agent.Agent{Name: "support", Model: llm, Tools: []tool.Tool{slow},
			Callbacks: agent.Callbacks{OnToolError: []agent.OnToolErrorCallback{agent.ClassifyToolError()}}},
		Sessions: session.NewMemory(),
	}
	out, err := r.Invoke(context.Background(), agent.RunRequest{InvocationID: "inv-2", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "When does my parcel arrive?")})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	resp := out.CompletedTools[0].Response
	fmt.Println(resp["status"], resp["reason"], resp["retryable"])
	fmt.Println(out.Final.Content.Text())
	// Output:
	// error timeout true
	// The carrier is slow right now; try again soon.
}
