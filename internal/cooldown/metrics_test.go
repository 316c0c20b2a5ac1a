package cooldown_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
)

func TestMetricsOpenGaugeAndRejectedCalls(t *testing.T) {
	reg := prometheus.NewRegistry()
	mt := cooldown.NewMetrics(reg)
	provider := model.Func{ModelName: "gemini-x", Generate: func(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
		return model.Single(nil, errOverload)
	}}
	m := cooldown.Wrap(provider, cooldown.NewMemory(cfg()), cfg(), isTransient).WithMetrics(mt)
	ctx := context.Background()
	for range 11 { // 10 failures open the cooldown; the 11th call is refused
		for range m.GenerateContent(ctx, &model.Request{}, false) {
		}
	}
	want := `
# HELP agentfleet_cooldown_open 1 while this worker sees the model's fleet-wide cooldown open, else 0.
# TYPE agentfleet_cooldown_open gauge
agentfleet_cooldown_open{model="gemini-x"} 1
# HELP agentfleet_cooldown_rejected_calls_total Model calls refused without calling the provider because the model was in cooldown.
# TYPE agentfleet_cooldown_rejected_calls_total counter
agentfleet_cooldown_rejected_calls_total{model="gemini-x"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), cooldown.MetricOpen, cooldown.MetricRejectedCalls); err != nil {
		t.Fatal(err)
	}
	// A cooldown that has ended reads 0 at scrape time, with no further call.
	mt.Observe("gemini-x", time.Now().Add(-time.Second))
	want = `
# HELP agentfleet_cooldown_open 1 while this worker sees the model's fleet-wide cooldown open, else 0.
# TYPE agentfleet_cooldown_open gauge
agentfleet_cooldown_open{model="gemini-x"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), cooldown.MetricOpen); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsNilRecordsNothing(t *testing.T) {
	var mt *cooldown.Metrics
	mt.Observe("m", time.Now()) // must not panic
	provider := model.Func{ModelName: "m", Generate: func(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
		return model.Single(&model.Response{}, nil)
	}}
	m := cooldown.Wrap(provider, cooldown.NewMemory(cfg()), cfg(), isTransient).WithMetrics(nil)
	for _, err := range m.GenerateContent(context.Background(), &model.Request{}, false) {
		if err != nil {
			t.Fatal(err)
		}
	}
}
