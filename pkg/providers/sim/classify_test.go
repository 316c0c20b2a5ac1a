package sim

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// Cross-check: each simulated fault class lands in the taxonomy class it
// imitates, through the same classifiers the worker uses.
func TestTaxonomyFaults(t *testing.T) {
	want := map[FaultClass]taxonomy.Class{
		FaultRateLimited:           taxonomy.RateLimited,
		FaultQuota:                 taxonomy.QuotaExhausted,
		FaultServer:                taxonomy.Server,
		FaultTimeout:               taxonomy.Timeout,
		FaultTransport:             taxonomy.Transport,
		FaultOutputBlocked:         taxonomy.OutputBlocked,
		FaultTruncated:             taxonomy.Truncated,
		FaultMalformedFunctionCall: taxonomy.ToolProtocol,
	}
	req := &model.Request{Contents: []*model.Content{user("refund A-1042")}}
	for _, class := range FaultClasses {
		w, ok := want[class]
		if !ok {
			t.Errorf("fault class %s has no expected taxonomy class", class)
			continue
		}
		// Several seeds so both transport variants (EOF, reset) are seen.
		for seed := uint64(0); seed < 4; seed++ {
			m := newSim(t, Config{Seed: seed, Faults: Faults{class: 1}})
			rs, err := call(t, m, req, false)
			var got taxonomy.Class
			if err != nil {
				got = taxonomy.ClassifyError(err)
			} else if c, failed := taxonomy.ClassifyResponse(rs[len(rs)-1]); failed {
				got = c
			}
			if got != w {
				t.Errorf("%s (seed %d): class %q, want %s (err %v)", class, seed, got, w, err)
			}
		}
	}

	m := newSim(t, Config{})
	rs, err := call(t, m, req, false)
	if err != nil {
		t.Fatal(err)
	}
	if c, failed := taxonomy.ClassifyResponse(rs[0]); failed {
		t.Errorf("healthy scripted response classified %s", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range newSim(t, Config{Latency: time.Hour}).GenerateContent(ctx, req, false) {
		if got := taxonomy.ClassifyError(err); got != taxonomy.Canceled {
			t.Errorf("cancelled latency: class %s", got)
		}
	}
}
