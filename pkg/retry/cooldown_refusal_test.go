package retry_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// The production chain is retry(cooldown(provider)) (app.ModelChain). When
// the first attempt's failure opens the fleet cooldown, the retry decorator
// sleeps and makes a second "attempt" that the breaker refuses without
// calling the provider. agentfleet_model_provider_attempts_total ("provider
// requests") does not count it, and the call's final error classifies by
// the provider's only answer, a 503 (SERVER), while the refusal is still
// there for the worker to hold the work (errors.As an *OpenError).
func TestCooldownRefusalIsNotAProviderAttempt(t *testing.T) {
	var providerCalls atomic.Int32
	guarded := guarded503(&providerCalls)
	m, fx := newModel(t, guarded, retry.Config{MaxAttempts: 3})
	_, err := collect(m.GenerateContent(context.Background(), req, false))
	var oe *cooldown.OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("want the breaker's refusal on the retry, got %v", err)
	}
	if got := fx.attempts("scripted"); got != float64(providerCalls.Load()) {
		t.Errorf("provider attempts metric = %v, provider was called %d time(s)", got, providerCalls.Load())
	}
	if c := taxonomy.ClassifyError(err); c != taxonomy.Server {
		t.Errorf("final error classifies as %s; the provider's only answer was a 503 (SERVER)", c)
	}
	var gu *retry.GaveUpError
	if !errors.As(err, &gu) || gu.Reason != retry.ReasonNotSent || gu.Attempts != 1 {
		t.Errorf("final error = %v, want a GaveUpError (%s) after 1 provider attempt", err, retry.ReasonNotSent)
	}
}

// With PerAttempt accounting the budget counts provider requests: a retry
// the fleet cooldown refuses made none, so the invocation's budget does not
// count it (it was charged before the refusal and is given back).
func TestPerAttemptDoesNotChargeARefusedRetry(t *testing.T) {
	var providerCalls atomic.Int32
	guarded := guarded503(&providerCalls)
	m, _ := newModel(t, guarded, retry.Config{MaxAttempts: 3, Accounting: retry.PerAttempt})
	b := model.NewCallBudget(5)
	_ = b.Charge() // the agent loop's charge for this step
	_, err := collect(m.GenerateContent(model.WithCallBudget(context.Background(), b), req, false))
	var oe *cooldown.OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("want the breaker's refusal on the retry, got %v", err)
	}
	if providerCalls.Load() != 1 || b.Used() != 1 {
		t.Fatalf("provider called %d time(s), budget used %d; want 1 and 1", providerCalls.Load(), b.Used())
	}
}

// guarded503 is a provider that answers every call with a 503, counted in
// calls, behind a fleet cooldown that opens on its first failure.
func guarded503(calls *atomic.Int32) model.Model {
	provider := model.Func{ModelName: "scripted", Generate: func(ctx context.Context, r *model.Request, stream bool) iter.Seq2[*model.Response, error] {
		calls.Add(1)
		return model.Single(nil, server503())
	}}
	ccfg := cooldown.Config{Window: 10 * time.Second, Buckets: 10, Threshold: 0.5, MinCalls: 1, Duration: time.Minute, CheckInterval: time.Minute}
	return cooldown.Wrap(provider, cooldown.NewMemory(ccfg), ccfg, func(err error) bool {
		return taxonomy.PolicyFor(taxonomy.ClassifyError(err)).Retryable
	})
}
