package taxonomy_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Regression (found in review, twenty-first session): OnModelError records
// and escalates an error chain whose methods panic instead of panicking
// itself.
//
// ClassifyError, IsCanceled and FailureFromError are documented (and built)
// never to panic on an error chain whose methods panic (a typed nil pointer
// wrapped with %w: ClassifyError's doc names the case); they file it
// UNKNOWN. OnModelError, the callback that calls all three, then ran a bare
// errors.Is(err, model.ErrNotSent) on the same chain, which dereferences the
// nil pointer and panics: the failure is neither recorded in session state
// nor counted in agentfleet_model_failures_total, and the agent loop reports
// a panicking on-model-error callback (with the taxonomy's stack) instead of
// the model's error.
func TestOnModelErrorSurvivesAChainThatPanics(t *testing.T) {
	var nilURL *url.Error // an SDK's typed-nil bug
	chains := map[string]error{
		"typed nil *url.Error wrapped with %w": fmt.Errorf("provider: %w", nilURL),
		"typed nil beside a real cause":        errors.Join(nilURL, errors.New("other")),
	}
	for name, err := range chains {
		t.Run(name, func(t *testing.T) {
			if got := taxonomy.ClassifyError(err); got != taxonomy.Unknown {
				t.Fatalf("precondition: ClassifyError = %s, want UNKNOWN (documented)", got)
			}
			m := taxonomy.NewMetrics(nil)
			cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "m", Metrics: m})
			var (
				resp     *model.Response
				cbErr    error
				panicked any
			)
			func() {
				defer func() { panicked = recover() }()
				r, e := cb(context.Background(), nil, nil, err)
				resp, cbErr = r, e
			}()
			if panicked != nil {
				t.Fatalf("OnModelError panicked on a chain ClassifyError handles: %v", panicked)
			}
			if resp != nil || cbErr != nil {
				t.Errorf("OnModelError = (%v, %v), want (nil, nil): UNKNOWN escalates", resp, cbErr)
			}
			if n := testutil.ToFloat64(m.Failures.WithLabelValues("m", string(taxonomy.Unknown), string(taxonomy.ChannelThrown))); n != 1 {
				t.Errorf("UNKNOWN failures counted = %v, want 1", n)
			}
		})
	}
}
