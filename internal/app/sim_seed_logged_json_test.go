// Regression (found in review, twenty-fourth session): the drawn simulated-provider
// seed is logged to be rerun with.
package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

// TestLoggedSimSeedSurvivesJSONTooling: the seed is logged as a
// JSON number drawn from all of uint64; a log pipeline that reads JSON
// numbers as float64 (encoding/json into any, jq 1.6, JavaScript, an
// Elasticsearch double) turns nearly every such seed into another one, so
// the seed read back from the log reruns other faults.
func TestLoggedSimSeedSurvivesJSONTooling(t *testing.T) {
	for i := 0; i < 16; i++ {
		var buf bytes.Buffer
		mc := config.DefaultWorker().Model
		m, err := app.Provider(context.Background(), mc, func(string) string { return "" }, zerolog.New(&buf))
		if err != nil {
			t.Fatal(err)
		}
		want := m.(*sim.Model).Config().Seed
		var line map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &line); err != nil {
			t.Fatal(err)
		}
		f, ok := line["seed"].(float64)
		if !ok {
			t.Fatalf("no seed in %s", buf.String())
		}
		if got := uint64(f); got != want {
			t.Fatalf("the model drew seed %d; its log line read as JSON gives %.0f (%d): rerun with it, other faults (log: %s)", want, f, got, strings.TrimSpace(buf.String()))
		}
	}
}

// TestSimSeedRerunnableFromEnvAndYAML: any drawn seed (up to
// 2^64-1) can be given back by AGENTFLEET_MODEL_SIM_SEED and model.sim.seed.
func TestSimSeedRerunnableFromEnvAndYAML(t *testing.T) {
	const big = "18446744073709551615"
	env := map[string]string{"AGENTFLEET_MODEL_SIM_SEED": big}
	c, err := config.LoadWorker(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &bytes.Buffer{})
	if err != nil || c.Model.Sim.Seed != 18446744073709551615 {
		t.Fatalf("env: seed %d, %v", c.Model.Sim.Seed, err)
	}
	p := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(p, []byte("model:\n  sim:\n    seed: "+big+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = config.LoadWorker([]string{"--config", p}, func(string) (string, bool) { return "", false }, &bytes.Buffer{})
	if err != nil || c.Model.Sim.Seed != 18446744073709551615 {
		t.Fatalf("yaml: seed %d, %v", c.Model.Sim.Seed, err)
	}
}
