package taxonomy_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/retry"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// A call refused by the fleet cooldown never reached the provider: the
// worker Naks the message with a delay and runs it again later. The
// on-model-error callback does not count it as a model failure (it was
// counted as UNKNOWN, which fires AgentfleetUnknownFailuresWeeklyReview),
// and never answers it with a degraded message. A refusal of a retry
// (retry.ReasonNotSent) records the provider failure before it, once.
func TestCooldownRefusalIsNotAnUnknownFailure(t *testing.T) {
	open := &cooldown.OpenError{Model: "m", Until: time.Now().Add(time.Minute)}
	cases := map[string]error{
		"refused on the first attempt": open,
		"refused on a retry": &retry.GaveUpError{Model: "m", Attempts: 2, Reason: retry.ReasonNotRetryable,
			Err: open},
	}
	for name, err := range cases {
		t.Run(name, func(t *testing.T) {
			m := taxonomy.NewMetrics(nil)
			cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "m", Metrics: m})
			if _, cerr := cb(context.Background(), nil, &model.Request{Model: "m"}, err); cerr != nil {
				t.Fatal(cerr)
			}
			if n := testutil.ToFloat64(m.Failures.WithLabelValues("m", string(taxonomy.Unknown), string(taxonomy.ChannelThrown))); n != 0 {
				t.Fatalf("a cooldown refusal (class %s) was counted as %v UNKNOWN model failure(s)", taxonomy.ClassifyError(err), n)
			}
		})
	}
	t.Run("refused after a provider failure", func(t *testing.T) {
		m := taxonomy.NewMetrics(nil)
		cb := taxonomy.OnModelError(taxonomy.CallbackOptions{Model: "m", Metrics: m})
		err := &retry.GaveUpError{Model: "m", Attempts: 1, Reason: retry.ReasonNotSent,
			Err: &model.ProviderError{Provider: "test", StatusCode: 503}, Cause: open}
		resp, cerr := cb(context.Background(), nil, &model.Request{Model: "m"}, err)
		if cerr != nil || resp != nil {
			t.Fatalf("callback = %v, %v: a refused retry must escalate (the worker holds the work), not be answered", resp, cerr)
		}
		if n := testutil.ToFloat64(m.Failures.WithLabelValues("m", string(taxonomy.Server), string(taxonomy.ChannelThrown))); n != 1 {
			t.Fatalf("SERVER failures = %v, want the provider's 503 counted once", n)
		}
		if n := testutil.ToFloat64(m.Failures.WithLabelValues("m", string(taxonomy.Unknown), string(taxonomy.ChannelThrown))); n != 0 {
			t.Fatalf("UNKNOWN failures = %v, want 0", n)
		}
	})
}
