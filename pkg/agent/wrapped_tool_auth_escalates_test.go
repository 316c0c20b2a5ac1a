package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// reviewFix2HTTPError is a downstream service's HTTP error, as a tool
// built on an HTTP client returns it (taxonomy.StatusCoder).
type reviewFix2HTTPError struct{ code int }

func (e *reviewFix2HTTPError) Error() string       { return fmt.Sprintf("payments api: HTTP %d", e.code) }
func (e *reviewFix2HTTPError) HTTPStatusCode() int { return e.code }

type reviewFix2ChargeArgs struct {
	OrderID string `json:"order_id"`
}

// Regression (found in review, eighteenth session): ClassifyToolError (the seed's recommended callback, wired by the shipped
// agent) converts "only failures the model can act on"; "bugs and auth
// errors escalate" (seed), so the worker dead-letters them and DESIGN's
// AUTH row pages ("DLQ (replay after the fix), page-level log and
// metric"). Since commit 1890bd3 the idempotency wrapper marks every Go
// error of a wrapped (effectful) tool tool.ErrOutcomeUnknown, and
// ClassifyToolError turns every such error into an outcome_unknown map for
// the model: a payments API answering 401 (a revoked key after a deploy)
// no longer ends the invocation. The run completes, the user is told the
// charge "is being checked", and nothing is dead-lettered or paged: every
// request fails this way, silently, until someone notices. (The timeout
// the commit meant to fix is one case; the mark covers every error.)
func TestWrappedToolAuthErrorStillEscalates(t *testing.T) {
	charge := tool.MustFunc("charge_card", "Charge the customer's card.",
		func(ctx context.Context, a reviewFix2ChargeArgs) (map[string]any, error) {
			return nil, fmt.Errorf("charge %s: %w", a.OrderID, &reviewFix2HTTPError{code: 401})
		})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("charge_card", map[string]any{"order_id": "A-1042"})),
		agenttest.Reply(agenttest.Text("Your charge is being checked.")),
	)
	runner := &agent.Runner{
		Agent: &agent.Agent{
			Name:  "billing",
			Model: llm,
			Tools: []tool.Tool{idempotency.Wrap(charge, idempotency.NewMemory(), idempotency.Options{Agent: "billing"})},
			Callbacks: agent.Callbacks{
				OnToolError: []agent.OnToolErrorCallback{agent.ClassifyToolError()},
			},
			MaxModelCalls: 10,
		},
		Sessions: session.NewMemory(),
	}
	events, err := agenttest.Collect(runner.Run(context.Background(), agent.RunRequest{
		InvocationID: "inv-fix2-auth", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "Charge order A-1042"),
	}))
	if err == nil {
		var resp map[string]any
		for _, e := range events {
			for _, fr := range e.FunctionResponses() {
				resp = fr.Response
			}
		}
		t.Fatalf("a wrapped tool's HTTP 401 did not escalate: the invocation completed (the model got %v), so the worker neither dead-letters nor pages AUTH", resp)
	}
	// The worker classifies the escalated error by its chain
	// (taxonomy.ClassifyError reads the StatusCoder: AUTH).
	var he *reviewFix2HTTPError
	if !errors.As(err, &he) || he.HTTPStatusCode() != 401 {
		t.Errorf("escalated error %v does not carry the tool's HTTP 401", err)
	}
}
