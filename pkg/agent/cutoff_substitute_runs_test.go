package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

// Regression (found in review, nineteenth session): countModelCalls
// skipped a cut-off event when the next event of the invocation was a
// substituted answer, assuming the substitute answered the same call. But
// the two can come from different runs: run 1's streamed call breaks after
// output and escalates (a CutOff event, no substitute: the worker puts the
// message back or dead-letters it), run 2 resumes and its first call fails
// before any output and is answered with a degraded message (a Substituted
// event right after run 1's CutOff). Two calls were charged, but a resumed
// run 3 counted one, so it got a call its budget does not have: with
// max_model_calls 2 the model was called a third time. Correct: the
// cut-off call and the substituted call are two earlier calls; run 3 stops
// with a *model.CallBudgetError before calling the model.
func TestCutOffAndLaterRunsSubstituteCountTwice(t *testing.T) {
	reset := errors.New("connection reset by peer")
	overloaded := &model.ProviderError{Provider: "test", StatusCode: 503}
	cut := agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund "), agenttest.Partial("is on")}, Err: reset}
	f := newFixture(t, cut, agenttest.Fail(overloaded), agenttest.Reply(agenttest.Text("third call")))
	f.agent.MaxModelCalls = 2
	// Degrades the 503 only (the reset of run 1 escalates).
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{
		func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
			if errors.Is(err, overloaded) {
				return &model.Response{Content: model.NewTextContent(model.RoleModel, "The service is busy; your request is queued."),
					FinishReason: model.FinishReasonStop, TurnComplete: true}, nil
			}
			return nil, nil
		},
	}
	run := func() (*agent.Outcome, error) {
		return f.runner.Invoke(context.Background(), agent.RunRequest{
			InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
			Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
		})
	}
	if _, err := run(); err == nil {
		t.Fatal("run 1: want the cut-off call's error")
	}
	out, err := run()
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if out.ModelCalls != 2 {
		t.Fatalf("run 2 charged %d calls in all, want 2 (1 earlier + 1)", out.ModelCalls)
	}
	out, err = run() // the degraded answer is not a finish: the loop runs on
	var be *model.CallBudgetError
	if !errors.As(err, &be) {
		t.Fatalf("run 3: err = %v, ModelCalls %d, model called %d times; want *model.CallBudgetError (limit 2, 2 calls already made)",
			err, out.ModelCalls, f.model.Calls())
	}
}

// The other side of TestCutOffAndLaterRunsSubstituteCountTwice: a streamed
// call that broke after output and was answered by an on-model-error
// substitute in the same run is one call (the cut-off marker and the
// substitute, which carries SameCall). A resumed run counts it once: with
// max_model_calls 2 it gets the second call, and a later run none.
func TestCutOffAndSameCallsSubstituteCountOnce(t *testing.T) {
	reset := errors.New("connection reset by peer")
	cut := agenttest.Step{Responses: []*model.Response{agenttest.Partial("Your refund "), agenttest.Partial("is on")}, Err: reset}
	f := newFixture(t, cut, agenttest.Reply(agenttest.Text("second call")), agenttest.Reply(agenttest.Text("third call")))
	f.agent.MaxModelCalls = 2
	f.agent.Callbacks.OnModelError = []agent.OnModelErrorCallback{
		func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
			return &model.Response{Content: model.NewTextContent(model.RoleModel, "The service is busy; your request is queued."),
				FinishReason: model.FinishReasonStop, TurnComplete: true}, nil
		},
	}
	run := func() (*agent.Outcome, error) {
		return f.runner.Invoke(context.Background(), agent.RunRequest{
			InvocationID: "inv-1", UserID: "u1", SessionID: "s1", Stream: true,
			Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
		})
	}
	out, err := run()
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	if out.ModelCalls != 1 || out.Final == nil || !out.Final.Substituted || !out.Final.SameCall {
		t.Fatalf("run 1: ModelCalls %d, final %+v; want 1 call answered by a substitute marked SameCall", out.ModelCalls, out.Final)
	}
	if evs := f.session(t).Events; len(evs) != 3 || !evs[1].CutOff || evs[1].SameCall || !evs[2].Substituted {
		t.Fatalf("run 1 stored %d events, want the message, the cut-off marker, then the substitute", len(evs))
	}
	out, err = run() // the degraded answer is not a finish: the loop runs on
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if out.ModelCalls != 2 || f.model.Calls() != 2 {
		t.Fatalf("run 2: ModelCalls %d, model called %d times; want 2 and 2 (the cut-off call counted once)", out.ModelCalls, f.model.Calls())
	}
}
