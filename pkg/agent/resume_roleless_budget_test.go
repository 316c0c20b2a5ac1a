package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// A response substituted by an on-model-error callback was charged to the
// budget (the call was made and failed), and a resumed invocation is
// charged the model calls of its earlier runs. A substitute built as the
// seed builds it (Content.fromParts: no role) is a model turn all the same
// (buildContents sends a role-less agent event as the model's), so the
// resumed run must count it.
func TestResumeCountsARolelessSubstitute(t *testing.T) {
	f := newFixture(t,
		agenttest.Reply(getOrder("A-1042")),
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 503}),
	)
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return &model.Response{Content: &model.Content{Parts: []*model.Part{{Text: "The assistant is busy right now."}}}, TurnComplete: true}, nil
	}}
	out, err := f.invoke("inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if out.ModelCalls != 2 {
		t.Fatalf("first run charged %d calls, want 2", out.ModelCalls)
	}
	// A replay of the degraded answer resumes the invocation.
	f.model.Push(agenttest.Reply(agenttest.Text("It shipped.")))
	out, err = f.invoke("inv-1")
	if err != nil {
		t.Fatal(err)
	}
	if out.ModelCalls != 3 {
		t.Fatalf("resumed run: ModelCalls = %d, want 3 (2 earlier calls + 1): the substituted call was not counted", out.ModelCalls)
	}
}
