package agent_test

import (
	"context"
	"errors"
	"iter"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// cancelThenFailModel is a provider whose call is cancelled by its caller
// (the worker's shutdown cancels the invocation) while the provider's 503
// answer is already on its way: the call ends with the provider's error,
// which does not wrap context.Canceled.
type cancelThenFailModel struct{ cancel context.CancelFunc }

func (m cancelThenFailModel) Name() string { return "scripted" }
func (m cancelThenFailModel) GenerateContent(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.cancel()
		<-ctx.Done()
		yield(nil, &model.ProviderError{Provider: "sim", StatusCode: 503, Status: "UNAVAILABLE"})
	}
}

// Regression (found in review, eighteenth session): a tool call that
// fails while the invocation is being cancelled ends the invocation with
// an error that matches the context's (runTool wraps it), so the worker
// Naks it and another worker resumes it. A model call in the same
// situation must end the same way; otherwise the worker classifies the
// provider's error (SERVER), dead-letters a request it was merely asked to
// put back, and the user is told the request was queued after a failure.
func TestCancelledModelCallEndsWithTheContextsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &agent.Runner{
		Agent:    &agent.Agent{Name: "support", Model: cancelThenFailModel{cancel: cancel}},
		Sessions: session.NewMemory(),
	}
	_, err := r.Invoke(ctx, agent.RunRequest{
		InvocationID: "inv-1", UserID: "u1", SessionID: "s1",
		Message: model.NewTextContent(model.RoleUser, "refund A-1042"),
	})
	if err == nil {
		t.Fatal("invocation succeeded")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a model call cut short by the invocation's cancellation ended with %v, which does not match context.Canceled (a tool call in the same situation does): the worker dead-letters it as a provider failure instead of Nak-ing it", err)
	}
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 503 {
		t.Errorf("errors.As(%v, *model.ProviderError) no longer finds the provider's error", err)
	}
	var me *agent.ModelError
	if !errors.As(err, &me) {
		t.Errorf("%v is no *agent.ModelError", err)
	}
}
