package agent_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// TestResumeOfEndedDegradedAnswerRunsOn: a resumed invocation that a
// degraded answer ended asks the model again.
//
// Regression (found in review of this session's fix, twenty-second
// session): the "hand back the ending event" path of a resumed invocation
// did not skip a substituted
// (degraded) answer, which the already-finished path right above it treats
// as "not a finish: run on". An on-model-error callback that answers with a
// degraded message and ends the invocation (cc.EndInvocation) makes every
// resumed run (the worker's replay of the degraded dead letter) hand back
// the same degraded answer as Final without calling the model: the worker
// sees degradedClass again and dead-letters it again, replay after replay,
// until the replayer parks it. (Before the change the resumed run returned
// Final nil and the worker published "completed" with empty content.)
func TestResumeOfEndedDegradedAnswerRunsOn(t *testing.T) {
	overloaded := &model.ProviderError{Provider: "test", StatusCode: 503}
	f := newFixture(t, agenttest.Fail(overloaded), agenttest.Reply(agenttest.Text("Your refund is booked.")))
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{
		func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
			cc.EndInvocation()
			return &model.Response{Content: model.NewTextContent(model.RoleModel, "The service is busy; your request is queued."),
				FinishReason: model.FinishReasonStop, TurnComplete: true}, nil
		},
	}
	run := func() (*agent.Outcome, error) {
		return f.runner.Invoke(context.Background(), agent.RunRequest{
			InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
			Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
		})
	}
	first, err := run()
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	if first.Final == nil || !first.Final.Substituted {
		t.Fatalf("run 1: final %+v, want the substituted answer", first.Final)
	}
	again, err := run() // the replay of the degraded dead letter
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if again.Final != nil && again.Final.Substituted {
		t.Fatalf("resumed run handed back the degraded answer %q as Final without calling the model (model calls %d): "+
			"the worker dead-letters it again on every replay", again.Final.Content.Text(), f.model.Calls())
	}
	if again.Final == nil || again.Final.Content.Text() != "Your refund is booked." {
		t.Fatalf("resumed run: final %+v, model calls %d; want the model asked again (a degraded answer is not a finish)", again.Final, f.model.Calls())
	}
}
