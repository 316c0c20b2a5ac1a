package cooldown_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, seventeenth session): The production chain (app.ModelChain: retry around the cooldown around
// the provider) with a caller whose own deadline has passed: every call
// ends with the caller's context.DeadlineExceeded (classified TIMEOUT,
// Retryable). That is the caller's deadline, not the provider failing: the
// fleet-wide cooldown must not count it, or one impatient caller (or a
// batch with a short deadline) stops every worker of the fleet from
// calling a healthy model. The attempt timeout (the provider accepted the
// request and never answered) still counts: TestAttemptTimeoutsOpenTheCooldown.
func TestRetryCallerDeadlineDoesNotOpenTheCooldown(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			provider := model.Func{ModelName: "healthy", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
				return func(yield func(*model.Response, error) bool) {
					<-ctx.Done() // answers only after the caller gave up
					yield(nil, ctx.Err())
				}
			}}
			isTransient := func(err error) bool { return taxonomy.PolicyFor(taxonomy.ClassifyError(err)).Retryable }
			guarded := cooldown.Wrap(provider, s, cfg(), isTransient) // MinCalls 10, threshold 0.5
			chain, err := retry.New(guarded, retry.Config{MaxAttempts: 1, DisableBudget: true})
			if err != nil {
				t.Fatal(err)
			}
			// A deadline already passed: nothing depends on the wall clock.
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			for i := range 10 {
				var callErr error
				for _, e := range chain.GenerateContent(ctx, &model.Request{}, false) {
					callErr = e
				}
				if !errors.Is(callErr, context.DeadlineExceeded) {
					t.Fatalf("call %d: err = %v, want the caller's deadline", i+1, callErr)
				}
			}
			until, err := s.Status(context.Background(), "healthy")
			if err != nil {
				t.Fatal(err)
			}
			if !until.IsZero() {
				t.Errorf("the fleet cooldown of %q opened (until %s) on 10 calls that only the callers' own deadline ended", "healthy", until.Format(time.RFC3339))
			}
		})
	}
}
