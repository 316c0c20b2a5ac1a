package config_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/cooldown"
)

// Regression (found in review, nineteenth session): cooldown.threshold is checked as "threshold <= 0 || threshold > 1", which
// NaN passes: AGENTFLEET_COOLDOWN_THRESHOLD=NaN (or `threshold: .nan` in
// YAML) loads and validates, for the worker and the dlq-replayer alike. The
// breaker then compares "failures >= NaN × calls", which is never true, so
// the fleet-wide cooldown is silently off (no log line, no metric says so)
// while the configuration looks on. Validate refuses NaN everywhere else
// (model.sim.tool_faults, model.retry.budget_*: "!(v >= 0)"). Correct: a
// NaN threshold is refused like any threshold outside (0, 1].
func TestNaNCooldownThresholdIsRefused(t *testing.T) {
	lookup := func(k string) (string, bool) {
		if k == config.EnvPrefix+"COOLDOWN_THRESHOLD" {
			return "NaN", true
		}
		return "", false
	}
	c, err := config.LoadWorker(nil, lookup, io.Discard)
	if err == nil {
		// What the fleet then gets: a breaker that never opens.
		m := cooldown.NewMemory(c.Cooldown)
		ctx := context.Background()
		opened := false
		for range 100 {
			if until, _ := m.Record(ctx, "m", true); !until.IsZero() {
				opened = true
			}
		}
		t.Errorf("cooldown.threshold NaN was accepted (threshold %v); after 100 transient failures out of 100 calls the breaker opened: %v", c.Cooldown.Threshold, opened)
	}
	r, err := config.LoadReplayer("", lookup)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err == nil {
		t.Errorf("dlq-replayer: cooldown.threshold NaN was accepted")
	}
}

// Every float key of the worker's and the replayer's configuration refuses
// NaN and the infinities, which pass comparison-based range checks: a NaN
// replay.halt_ratio never halted a replay, a NaN replay.rate read as
// unthrottled, an infinite model.retry.budget_max_tokens allowed no retry
// at all (tokens > capacity/2 is false for +Inf).
func TestNonFiniteFloatKeysAreRefused(t *testing.T) {
	env := func(key, val string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == config.EnvPrefix+key {
				return val, true
			}
			return "", false
		}
	}
	for _, val := range []string{"NaN", "Inf", "-Inf"} {
		for _, k := range []struct{ env, key string }{
			{"COOLDOWN_THRESHOLD", "cooldown.threshold"},
			{"MODEL_RETRY_BUDGET_MAX_TOKENS", "model.retry.budget_max_tokens"},
			{"MODEL_RETRY_BUDGET_TOKEN_RATIO", "model.retry.budget_token_ratio"},
			{"MODEL_SIM_TOOL_FAULTS", "model.sim.tool_faults"},
		} {
			if _, err := config.LoadWorker(nil, env(k.env, val), io.Discard); err == nil {
				t.Errorf("worker: %s=%s was accepted", k.env, val)
			} else if !strings.Contains(err.Error(), k.key) {
				t.Errorf("worker: %s=%s: the error does not name %s: %v", k.env, val, k.key, err)
			}
		}
		for _, key := range []string{"COOLDOWN_THRESHOLD", "REPLAY_RATE", "DRAIN_RATE", "REPLAY_HALT_RATIO"} {
			r, err := config.LoadReplayer("", env(key, val))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Validate(); err == nil {
				t.Errorf("dlq-replayer: %s=%s was accepted", key, val)
			}
		}
	}
}
