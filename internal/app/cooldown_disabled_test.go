package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// cooldown.disabled: true "turns the breaker off" (configs/worker.yaml,
// cooldown.Config.Disabled) for the worker's pre-check as for the model
// decorator: with the fleet's Redis key saying the model cools down, such a
// worker still runs the request. (StartWorker handed the cooldown store to
// the worker, whose pre-check put every request back for the whole
// cooldown.)
func TestCooldownDisabledWorkerIgnoresTheFleetBreaker(t *testing.T) {
	s := natstest.RunServer(t)
	rdb, prefix := redistest.Client(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.Embedded.Enabled = false
	cfg.Redis.URL, cfg.Redis.Prefix, cfg.Redis.DemoPrefix = redistest.URL(), prefix, prefix
	cfg.MetricsAddr = ""
	cfg.LogLevel = "debug"
	cfg.Worker.Name = "w-review3-cooldown-off"
	cfg.Model.Sim.Latency = time.Millisecond
	cfg.Cooldown.Disabled = true

	// Another worker's breaker (or one from before this config change)
	// opened the fleet-wide cooldown of the model this worker uses.
	if err := rdb.Set(context.Background(), prefix+"cooldown:sim_support:open", "1", cfg.Cooldown.WithDefaults().Duration).Err(); err != nil { // 30s, the default cooldown
		t.Fatal(err)
	}

	logs := logtest.New("worker consuming")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	logs.Wait(t, "worker consuming")

	sc := r.Infra.Streams
	cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	actx, acancel := context.WithTimeout(ctx, 15*time.Second)
	defer acancel()
	res, err := cl.SubmitAndAwait(actx, supportRequest("inv-review3-cooldown-off", "A-1001"))
	if err != nil {
		naks := strings.Count(logs.String(), "model cooling down fleet-wide")
		t.Fatalf("cooldown.disabled worker: no result within 15s (%v); the worker Nak'ed it %d time(s) for the fleet's cooldown", err, naks)
	}
	if res.Status != envelope.StatusCompleted {
		t.Errorf("status %s, want completed", res.Status)
	}
}
