package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Zero means "the default" for the worker's waits and counts, but the
// worker only replaces zero: a negative value would be used as it is.
// NakWithDelay with a non-positive delay sends a plain Nak (immediate
// redelivery), so busy_delay: -2s (a sign typo) would turn every busy
// session into a fleet-wide redelivery spin, infra_backoff_max: -30s would
// do the same for the whole queue while Redis is down, drain_timeout: -25s
// would stop in-flight work at once on every SIGTERM, and a negative
// max_model_calls would remove the call budget. Validate rejects each of
// them and names the key.
func TestValidateRejectsNegativeWaits(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*config.Worker)
	}{
		{"worker.busy_delay", func(c *config.Worker) { c.Worker.BusyDelay = -2 * time.Second }},
		{"worker.infra_backoff_max", func(c *config.Worker) { c.Worker.InfraBackoffMax = -30 * time.Second }},
		{"worker.drain_timeout", func(c *config.Worker) { c.Worker.DrainTimeout = -25 * time.Second }},
		{"worker.tool_timeout", func(c *config.Worker) { c.Worker.ToolTimeout = -time.Second }},
		{"streams.duplicate_window", func(c *config.Worker) { c.Streams.DuplicateWindow = -time.Minute }},
		{"streams.results_max_age", func(c *config.Worker) { c.Streams.ResultsMaxAge = -time.Hour }},
		{"streams.replicas", func(c *config.Worker) { c.Streams.Replicas = -1 }},
		{"streams.max_ack_pending", func(c *config.Worker) { c.Streams.MaxAckPending = -1 }},
		{"streams.max_request_bytes", func(c *config.Worker) { c.Streams.MaxRequestBytes = -1 }},
		{"model.max_model_calls", func(c *config.Worker) { c.Model.MaxModelCalls = -1 }},
		{"model.retry.attempts", func(c *config.Worker) { c.Model.Retry.Attempts = -1 }},
		{"model.retry.initial", func(c *config.Worker) { c.Model.Retry.Initial = -time.Second }},
		{"model.retry.max", func(c *config.Worker) { c.Model.Retry.Max = -time.Second }},
		{"model.retry.hint_cap", func(c *config.Worker) { c.Model.Retry.HintCap = -time.Second }},
		{"model.retry.attempt_timeout", func(c *config.Worker) { c.Model.Retry.AttemptTimeout = -time.Second }},
		{"model.retry.budget_max_tokens", func(c *config.Worker) { c.Model.Retry.BudgetMaxTokens = -1 }},
		{"model.retry.budget_token_ratio", func(c *config.Worker) { c.Model.Retry.BudgetTokenRatio = -0.1 }},
		{"model.sim.latency", func(c *config.Worker) { c.Model.Sim.Latency = -time.Millisecond }},
	} {
		c := config.DefaultWorker()
		c.Embedded.Enabled = true
		if err := c.Validate(); err != nil {
			t.Fatalf("defaults: %v", err)
		}
		tc.set(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s negative: accepted by Validate", tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s negative: the error does not name the key: %v", tc.key, err)
		}
	}
}

// Zero keeps meaning "the default": Validate accepts it for every key the
// negative check covers.
func TestValidateAcceptsZeroAsTheDefault(t *testing.T) {
	c := config.DefaultWorker()
	c.Embedded.Enabled = true
	c.Worker.BusyDelay, c.Worker.InfraBackoffMax, c.Worker.DrainTimeout = 0, 0, 0
	c.Streams.DuplicateWindow, c.Streams.ResultsMaxAge = 0, 0
	c.Streams.Replicas, c.Streams.MaxAckPending, c.Streams.MaxRequestBytes = 0, 0, 0
	c.Model.MaxModelCalls = 0
	c.Model.Retry = config.Retry{}
	c.Model.Sim.Latency = 0
	if err := c.Validate(); err != nil {
		t.Fatalf("zero values (the defaults) rejected: %v", err)
	}
}

// The replayer's own ages and the shared streams settings are checked the
// same way.
func TestReplayerValidateRejectsNegatives(t *testing.T) {
	for _, tc := range []struct {
		key string
		set func(*config.Replayer)
	}{
		{"replay.parked_max_age", func(c *config.Replayer) { c.Replay.ParkedMaxAge = -time.Hour }},
		{"streams.duplicate_window", func(c *config.Replayer) { c.Streams.DuplicateWindow = -time.Minute }},
		{"streams.results_max_age", func(c *config.Replayer) { c.Streams.ResultsMaxAge = -time.Hour }},
		{"streams.replicas", func(c *config.Replayer) { c.Streams.Replicas = -1 }},
	} {
		c := config.DefaultReplayer()
		if err := c.Validate(); err != nil {
			t.Fatalf("defaults: %v", err)
		}
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s negative: Validate = %v, want an error naming it", tc.key, err)
		}
	}
}

// nats.url and embedded.enabled together are refused: embedded mode
// connects to its own server, so the URL was ignored and the worker
// consumed nothing from the server producers publish to while it reported
// ready (a copied config file with embedded.enabled: true and a deployment's
// AGENTFLEET_NATS_URL, or --embedded --nats-url).
func TestValidateRefusesANATSURLWithEmbeddedMode(t *testing.T) {
	c := config.DefaultWorker()
	c.NATS.URL, c.Embedded.Enabled = "nats://user:secret@prod:4222", true
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "nats.url") || !strings.Contains(err.Error(), "embedded.enabled") {
		t.Fatalf("Validate = %v; want an error naming nats.url and embedded.enabled", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("the error shows the URL's password: %v", err)
	}
	if _, err := config.LoadWorker([]string{"--embedded", "--nats-url", "nats://prod:4222"}, func(string) (string, bool) { return "", false }, io.Discard); err == nil {
		t.Fatal("LoadWorker accepted --embedded with --nats-url")
	}
}
