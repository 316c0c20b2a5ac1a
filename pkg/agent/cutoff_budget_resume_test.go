package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, seventeenth session): A streamed model call that forwarded output and then broke (a CutOff
// event, no on-model-error substitute) was a model call: the run charged
// it to the budget. A resumed run (redelivery, or a DLQ replay without
// Agent-Fresh-Budget) must charge it again as one of the invocation's
// earlier calls; otherwise every run gets one call for free and a model
// whose stream always breaks is called once per replay for ever, the
// budget never reached.
func TestRetryCutOffCallCountsOnResume(t *testing.T) {
	reset := errors.New("connection reset by peer")
	cut := agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund "), agenttest.Partial("is on")}, Err: reset}
	f := newFixture(t, cut, cut, cut)
	f.agent.MaxModelCalls = 2
	run := func() (*agent.Outcome, error) {
		return f.runner.Invoke(context.Background(), agent.RunRequest{
			InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
			Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
		})
	}
	out, err := run()
	var me *agent.ModelError
	if !errors.As(err, &me) || !me.AfterOutput {
		t.Fatalf("run 1: err = %v, want a *ModelError after output", err)
	}
	if out.ModelCalls != 1 {
		t.Fatalf("run 1 charged %d calls, want 1", out.ModelCalls)
	}

	out, err = run() // resume: the cut call of run 1 counts
	if !errors.As(err, &me) {
		t.Fatalf("run 2: err = %v, want a *ModelError", err)
	}
	if out.ModelCalls != 2 {
		t.Errorf("run 2 (resumed): ModelCalls = %d, want 2 (1 earlier cut-off call + 1)", out.ModelCalls)
	}

	_, err = run() // two calls made with a budget of 2: no third
	var be *model.CallBudgetError
	if !errors.As(err, &be) {
		t.Errorf("run 3: err = %v, want *model.CallBudgetError (budget 2, 2 calls made); model called %d times", err, f.model.Calls())
	}
}
