package app_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// TestWorkerStartsItsModelsFailureSeriesAtZero: the "any increase" alerts
// see a failure after a restart only as an increase() from 0, so a worker
// creates its model's failure series for every class and channel at start.
func TestWorkerStartsItsModelsFailureSeriesAtZero(t *testing.T) {
	s := natstest.RunServer(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.Embedded.Enabled = false
	cfg.Redis.URL = "" // NATS KV stores
	cfg.MetricsAddr = ""
	cfg.Worker.Name = "w-metrics-init"
	cfg.Model.Sim.Latency = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })

	want := 0
	for _, c := range taxonomy.Classes() {
		if c != taxonomy.Canceled {
			want += 2 // thrown and in_band
		}
	}
	if got := testutil.CollectAndCount(r.Registry, taxonomy.MetricModelFailures); got != want {
		t.Errorf("%d %s series at start, want %d (every class on both channels, at 0)", got, taxonomy.MetricModelFailures, want)
	}
}
