package app_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// silentModel accepts every request and never answers until the
// request's context ends: a provider that hangs.
type silentModel struct{ calls int }

func (s *silentModel) Name() string { return "silent" }

func (s *silentModel) GenerateContent(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		s.calls++
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// The worker's model chain bounds each attempt with
// model.retry.attempt_timeout: a provider that never answers ends the call
// as TIMEOUT after the configured attempts, instead of holding the
// invocation for ever.
func TestModelChainBoundsAHungProvider(t *testing.T) {
	if config.DefaultAttemptTimeout != retry.DefaultAttemptTimeout {
		t.Fatalf("config.DefaultAttemptTimeout %v differs from retry.DefaultAttemptTimeout %v", config.DefaultAttemptTimeout, retry.DefaultAttemptTimeout)
	}
	cfg := config.DefaultWorker().Model
	if cfg.Retry.AttemptTimeout != retry.DefaultAttemptTimeout {
		t.Fatalf("default model.retry.attempt_timeout = %v, want %v", cfg.Retry.AttemptTimeout, retry.DefaultAttemptTimeout)
	}
	cfg.Retry.AttemptTimeout = 20 * time.Millisecond
	cfg.Retry.Attempts, cfg.Retry.Initial, cfg.Retry.Max = 2, time.Millisecond, time.Millisecond
	provider := &silentModel{}
	chain, err := app.ModelChain(provider, cfg, cooldown.NewMemory(cooldown.Config{}.WithDefaults()), cooldown.Config{}.WithDefaults(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var callErr error
	for _, err := range chain.GenerateContent(context.Background(), &model.Request{Model: "silent"}, false) {
		callErr = err
	}
	var te *retry.AttemptTimeoutError
	if !errors.As(callErr, &te) || taxonomy.ClassifyError(callErr) != taxonomy.Timeout {
		t.Fatalf("err = %v (class %s), want an attempt timeout classified TIMEOUT", callErr, taxonomy.ClassifyError(callErr))
	}
	if provider.calls != 2 {
		t.Errorf("provider called %d times, want 2 (model.retry.attempts)", provider.calls)
	}
}
