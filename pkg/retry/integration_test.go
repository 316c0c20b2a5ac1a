package retry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
	"github.com/agentfleet/agentfleet/pkg/taxonomy/taxonomytest"
)

func runAgent(t *testing.T, m model.Model, stream bool) (*agent.Outcome, []*session.Event, error) {
	t.Helper()
	r := &agent.Runner{
		Agent: &agent.Agent{
			Name:  "support",
			Model: m,
			Callbacks: agent.Callbacks{
				OnModelError: []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})},
				AfterModel:   []agent.AfterModelCallback{taxonomy.AfterModel(taxonomy.CallbackOptions{})},
			},
			MaxModelCalls: 10,
		},
		Sessions: session.NewMemory(),
	}
	reqst := agent.RunRequest{InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "Where is my order?"), Stream: stream}
	if stream {
		events, err := agenttest.Collect(r.Run(context.Background(), reqst))
		return nil, events, err
	}
	out, err := r.Invoke(context.Background(), reqst)
	return out, nil, err
}

// Through the real agent loop: a transient provider failure is retried
// inside one model call; the call budget counts it as one call unless
// PerAttempt is configured.
func TestIntegration_RetriesInsideOneStep(t *testing.T) {
	for _, tc := range []struct {
		accounting retry.Accounting
		wantCalls  int
	}{{retry.PerCall, 1}, {retry.PerAttempt, 2}} {
		t.Run(tc.accounting.String(), func(t *testing.T) {
			llm := agenttest.NewScriptedModel(
				agenttest.Fail(taxonomytest.GeminiError(t, 503, "UNAVAILABLE", "overloaded")),
				agenttest.Reply(agenttest.Text("It ships today.")),
			)
			m, _ := newModel(t, llm, retry.Config{Accounting: tc.accounting})
			out, _, err := runAgent(t, m, false)
			if err != nil {
				t.Fatal(err)
			}
			if out.Final == nil || out.Final.Content.Text() != "It ships today." {
				t.Fatalf("final %+v", out.Final)
			}
			if llm.Calls() != 2 || out.ModelCalls != tc.wantCalls {
				t.Fatalf("provider attempts %d, budgeted model calls %d; want 2, %d", llm.Calls(), out.ModelCalls, tc.wantCalls)
			}
		})
	}
}

// A stream that breaks after partial output is not retried: the loop
// records the cut-off and the on-model-error callback degrades.
func TestIntegration_StreamBreakIsNotRetried(t *testing.T) {
	llm := agenttest.NewScriptedModel(
		agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your order ")}, Err: &model.ProviderError{Provider: "sim", StatusCode: 503}},
		agenttest.Reply(agenttest.Text("should never be used")),
	)
	m, fx := newModel(t, llm, retry.Config{})
	_, events, err := runAgent(t, m, true)
	if err != nil {
		t.Fatal(err)
	}
	if llm.Calls() != 1 || fx.attempts("scripted") != 1 {
		t.Fatalf("attempts %d, want 1", llm.Calls())
	}
	var cut bool
	for _, e := range events {
		cut = cut || e.CutOff
	}
	if !cut {
		t.Fatal("no cut-off event")
	}
	if final := agenttest.FinalText(events); !strings.Contains(final, "not completed") {
		t.Fatalf("final %q, want the degraded message", final)
	}
}
