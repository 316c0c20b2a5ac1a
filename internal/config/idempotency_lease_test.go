package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Regression (found in review, nineteenth session): idempotency.lease 1ns or
// 2ns passed Validate ("must be positive"), and idempotency.Wrap panicked
// at start-up on its renewal interval, lease/3 = 0. Validate refuses a
// lease under config.MinIdempotencyLease with what to set, and every lease
// it accepts is one pkg/idempotency accepts too (Wrap panics exactly when
// NewTool fails, which it does when Options.Validate does).
func TestIdempotencyLeaseTooShortToRenewIsRefused(t *testing.T) {
	lookup := func(lease string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == config.EnvPrefix+"IDEMPOTENCY_LEASE" {
				return lease, true
			}
			return "", false
		}
	}
	for _, lease := range []string{"1ns", "2ns", "3ns", "1ms", "999ms"} {
		_, err := config.LoadWorker(nil, lookup(lease), io.Discard)
		if err == nil {
			t.Errorf("idempotency.lease %s was accepted", lease)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "idempotency.lease") || !strings.Contains(msg, "too short to renew") {
			t.Errorf("idempotency.lease %s: the error does not say what is wrong: %v", lease, err)
		}
	}
	for _, lease := range []time.Duration{config.MinIdempotencyLease, config.MinIdempotencyLease + time.Nanosecond, config.DefaultWorker().Idempotency.Lease} {
		c, err := config.LoadWorker(nil, lookup(lease.String()), io.Discard)
		if err != nil {
			t.Errorf("idempotency.lease %v was refused: %v", lease, err)
			continue
		}
		if err := (idempotency.Options{Lease: c.Idempotency.Lease}).WithDefaults().Validate(); err != nil {
			t.Errorf("idempotency.lease %v passes config.Validate but idempotency.Wrap would panic: %v", lease, err)
		}
	}
}
