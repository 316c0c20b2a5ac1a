// Regression (left open in the twenty-third session, fixed in the twenty-fourth): the
// simulated provider used one seed in every worker: model.sim.seed
// defaulted to 1, and Provider and the tool faults (model.sim.tool_faults)
// seeded their random sources with it, so every worker of a fleet drew the
// same model and tool faults at the same call counts. A chaos run then
// failed the whole fleet in step instead of one worker here and one
// there. Without model.sim.seed each worker now draws its own, logged at
// start (one for the model and the tool faults alike); a seed that is set
// still means exactly that seed, the same in every worker given it.
package app

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

// simDraws builds the provider of mc and records what each of n calls
// ended with (the provider error's status or the finish reason).
func simDraws(t *testing.T, mc config.Model, n int) (seed uint64, out []string) {
	t.Helper()
	m, err := Provider(context.Background(), mc, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	sm, ok := m.(*sim.Model)
	if !ok {
		t.Fatalf("Provider(%q) = %T, want *sim.Model", mc.Spec, m)
	}
	req := &model.Request{Contents: []*model.Content{model.NewTextContent(model.RoleUser, "refund A-1042")}}
	for i := 0; i < n; i++ {
		var last string
		for r, err := range m.GenerateContent(context.Background(), req, false) {
			var pe *model.ProviderError
			switch {
			case errors.As(err, &pe):
				last = pe.Status
			case err != nil:
				t.Fatal(err)
			default:
				last = string(r.FinishReason)
			}
		}
		out = append(out, last)
	}
	return sm.Config().Seed, out
}

// TestSimProviderSeedPerWorker: two workers' providers built from the
// default configuration draw different faults; two given the same
// model.sim.seed draw the same.
func TestSimProviderSeedPerWorker(t *testing.T) {
	mc := config.DefaultWorker().Model
	mc.Sim.Latency = 0
	mc.Sim.Faults = "server=0.5"
	sa, a := simDraws(t, mc, 128)
	sb, b := simDraws(t, mc, 128)
	if reflect.DeepEqual(a, b) {
		t.Fatalf("two workers with the default model.sim.seed (%d) drew the same 128 faults (seeds %d and %d)", mc.Sim.Seed, sa, sb)
	}
	mc.Sim.Seed = 7
	sc, c := simDraws(t, mc, 64)
	sd, d := simDraws(t, mc, 64)
	if sc != 7 || sd != 7 || !reflect.DeepEqual(c, d) {
		t.Fatalf("model.sim.seed 7: seeds %d and %d, same faults %v", sc, sd, reflect.DeepEqual(c, d))
	}
}

// toolDraws records which of n Get calls of cfg's orders service failed
// with a simulated tool fault.
func toolDraws(t *testing.T, cfg config.Worker, n int) []bool {
	t.Helper()
	orders := withToolFaults(cfg, support.NewMemoryOrders(support.Order{ID: "A-1042", TotalCents: 1299}))
	out := make([]bool, n)
	for i := range out {
		_, err := orders.Get(context.Background(), "A-1042")
		out[i] = errors.Is(err, support.ErrUnavailable)
	}
	return out
}

// TestToolFaultsSeedPerWorker: the same for model.sim.tool_faults.
func TestToolFaultsSeedPerWorker(t *testing.T) {
	cfg := config.DefaultWorker()
	cfg.Model.Sim.ToolFaults = 0.5
	if reflect.DeepEqual(toolDraws(t, cfg, 128), toolDraws(t, cfg, 128)) {
		t.Fatalf("two workers with the default model.sim.seed (%d) drew the same 128 tool faults", cfg.Model.Sim.Seed)
	}
	cfg.Model.Sim.Seed = 7
	if !reflect.DeepEqual(toolDraws(t, cfg, 64), toolDraws(t, cfg, 64)) {
		t.Fatal("model.sim.seed 7: two workers drew different tool faults")
	}
}

// loggedSimSeed starts a worker of cfg on s and returns the seed its
// "SIMULATED model provider" line names.
func loggedSimSeed(t *testing.T, cfg config.Worker) uint64 {
	t.Helper()
	logs := logtest.New()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := StartWorker(ctx, cfg, func(string) string { return "" }, logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "SIMULATED model provider") {
			continue
		}
		var entry struct {
			Seed *uint64 `json:"seed"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Seed == nil {
			t.Fatalf("the SIMULATED provider line names no seed (%v): %s", err, line)
		}
		return *entry.Seed
	}
	t.Fatalf("no SIMULATED provider line:\n%s", logs.String())
	return 0
}

// TestWorkerLogsItsOwnSimSeed: two workers started from the default
// configuration log different seeds, neither 0 (a seed to rerun with);
// one given model.sim.seed logs that seed.
func TestWorkerLogsItsOwnSimSeed(t *testing.T) {
	s := natstest.RunServer(t)
	cfg := config.DefaultWorker()
	cfg.NATS.URL = s.ClientURL()
	cfg.Embedded.Enabled = false
	cfg.MetricsAddr = ""
	cfg.Worker.Name = "w-seed-a"
	a := loggedSimSeed(t, cfg)
	cfg.Worker.Name = "w-seed-b"
	b := loggedSimSeed(t, cfg)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("two workers without model.sim.seed logged seeds %d and %d: want two different seeds, neither 0", a, b)
	}
	cfg.Worker.Name = "w-seed-c"
	cfg.Model.Sim.Seed = 7
	if c := loggedSimSeed(t, cfg); c != 7 {
		t.Fatalf("model.sim.seed 7: the worker logged seed %d", c)
	}
}
