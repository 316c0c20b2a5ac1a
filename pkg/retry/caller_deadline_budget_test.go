package retry_test

import (
	"context"
	"iter"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

// waitForCaller is a provider attempt that never answers before the
// caller's context ends, and then fails with the context's error, as an
// HTTP client does. It signals each start on started.
func waitForCaller(started chan<- struct{}) model.Model {
	return model.Func{ModelName: "slow", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			started <- struct{}{}
			<-ctx.Done()
			yield(nil, ctx.Err())
		}
	}}
}

// Regression (found in review, seventeenth session): The caller's own deadline ending an attempt is not the provider's fault:
// it must not cost the model's shared retry budget a token (the budget
// exists to stop retry storms against a failing provider; here no retry is
// even possible). No per-attempt timeout is set, so the attempt ends only
// through the caller's context.
func TestRetryCallerDeadlineDoesNotSpendRetryBudget(t *testing.T) {
	started := make(chan struct{}, 1)
	m, fx := newModel(t, waitForCaller(started), retry.Config{AttemptTimeout: -1})
	before := fx.budget.Tokens()

	// The caller's deadline has passed (a fixed date in the past: nothing
	// depends on the wall clock).
	past, cancel := context.WithDeadline(context.Background(), fx.clock.Now())
	defer cancel()

	done := make(chan error, 1)
	go func() {
		_, err := collect(m.GenerateContent(past, req, false))
		done <- err
	}()
	<-started
	err := <-done
	if err == nil {
		t.Fatal("call succeeded")
	}
	if got := fx.budget.Tokens(); got != before {
		t.Errorf("retry budget tokens = %v after the caller's own deadline ended the call, want %v (err: %v)", got, before, err)
	}
}
