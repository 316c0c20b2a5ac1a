package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, twenty-second session): a resumed run of an
// invocation an after-model callback ended hands back the response that
// ended it, so its Final is the first run's answer.
//
// An after-model callback (a guard) ends the invocation on a response that
// has text and a call it must not make. The first run's outcome has that
// response as Final (the worker publishes its text as the answer). A
// redelivery of the same invocation (the worker died after the events were
// stored, before it recorded the completion) must end the same way, but the
// resumed run returns without yielding anything: Final is nil, and the
// worker publishes a "completed" result with empty content instead of the
// answer the session holds.
func TestResumeAfterGuardEndKeepsTheFinalAnswer(t *testing.T) {
	f, _ := endingToolFixture(t, func() error { return nil },
		agenttest.Reply(&model.Response{Content: &model.Content{Role: model.RoleModel, Parts: []*model.Part{
			{Text: "I can't refund that myself; a colleague will follow up."},
			{FunctionCall: &model.FunctionCall{Name: "charge", Args: map[string]any{}}},
		}}}),
	)
	f.agent.Callbacks.AfterModel = append(f.agent.Callbacks.AfterModel,
		func(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
			if len(resp.FunctionCalls()) > 0 {
				cc.EndInvocation()
			}
			return nil, nil
		})
	first, err := f.invoke("inv-guard")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	if first.Final == nil {
		t.Fatalf("first run: no final response")
	}
	again, err := f.invoke("inv-guard")
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if again.Final == nil || again.Final.Content.Text() != first.Final.Content.Text() {
		got := "<nil>"
		if again.Final != nil {
			got = again.Final.Content.Text()
		}
		t.Fatalf("resumed run's final answer = %q, want the first run's %q (the invocation had already ended with it)", got, first.Final.Content.Text())
	}
}
