package retry_test

import (
	"math"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/retry"
)

// Regression (found in review, twenty-first session): Validate refuses
// NaN and ±Inf budget and backoff settings, which every range comparison
// let through: a decorator with BudgetMaxTokens +Inf ("no limit") or NaN
// never retried (AllowRetry compares tokens > max/2), a NaN
// BudgetTokenRatio switched retrying off after the first success, and a
// NaN Multiplier made the third attempt's wait Duration(NaN).
func TestValidateRefusesNonFiniteSettings(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(*retry.Config, float64)
	}{
		{"Multiplier", func(c *retry.Config, v float64) { c.Multiplier = v }},
		{"BudgetMaxTokens", func(c *retry.Config, v float64) { c.BudgetMaxTokens = v }},
		{"BudgetTokenRatio", func(c *retry.Config, v float64) { c.BudgetTokenRatio = v }},
	} {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			cfg := retry.Config{}
			tc.set(&cfg, v)
			err := cfg.WithDefaults().Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s = %g: Validate = %v; want it refused, naming %s", tc.field, v, err, tc.field)
			}
			if _, err := retry.New(agenttest.NewScriptedModel(), cfg); err == nil {
				t.Errorf("%s = %g: New accepted it", tc.field, v)
			}
		}
	}
	if err := (retry.Config{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}
