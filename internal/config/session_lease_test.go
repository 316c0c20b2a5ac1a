package config_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, twenty-second session): worker.session_lease
// 1ns passed Validate ("must be positive"): the lock is renewed while the
// invocation runs, each renewal a round trip, so such a lease is lost before
// the run's first step. Validate refuses a lease under
// config.MinSessionLease with what to set.
func TestSessionLeaseTooShortIsRefused(t *testing.T) {
	lookup := func(lease string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == config.EnvPrefix+"WORKER_SESSION_LEASE" {
				return lease, true
			}
			return "", false
		}
	}
	for _, lease := range []string{"1ns", "1ms", "999ms"} {
		_, err := config.LoadWorker(nil, lookup(lease), io.Discard)
		if err == nil {
			t.Errorf("worker.session_lease %s was accepted", lease)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "worker.session_lease") || !strings.Contains(msg, "too short") {
			t.Errorf("worker.session_lease %s: the error does not say what is wrong: %v", lease, err)
		}
	}
	for _, lease := range []time.Duration{config.MinSessionLease, config.DefaultWorker().Worker.SessionLease} {
		if _, err := config.LoadWorker(nil, lookup(lease.String()), io.Discard); err != nil {
			t.Errorf("worker.session_lease %v was refused: %v", lease, err)
		}
	}
}
