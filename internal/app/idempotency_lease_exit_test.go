package app_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

// Regression (found in review, nineteenth session): idempotency.lease 1ns
// or 2ns passed config.Validate, and idempotency.Wrap panicked in
// SupportAgent (the renewal interval lease/3 is 0): the worker crashed
// with a stack trace instead of exiting 2. The command refuses it as bad
// configuration, and CheckDerived refuses it for a configuration that did
// not go through config.Validate, before anything connects, so no panic
// escapes StartWorker.
func TestIdempotencyLeaseTooShortExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
	for _, lease := range []string{"1ns", "2ns"} {
		t.Run(lease, func(t *testing.T) {
			t.Setenv("AGENTFLEET_IDEMPOTENCY_LEASE", lease)
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			go func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("the worker panicked: %v", p)
						done <- -1
					}
				}()
				done <- app.WorkerMain([]string{"--name", "w-short-lease", "--data-dir", t.TempDir()}, &out, &errOut)
			}()
			select {
			case code := <-done:
				if code != 2 || !strings.Contains(errOut.String(), "idempotency.lease") {
					t.Errorf("exit code %d, want 2 naming idempotency.lease; stderr: %s", code, errOut.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the worker started and ran")
			}
		})
	}
	for _, lease := range []time.Duration{time.Nanosecond, 2 * time.Nanosecond} {
		c := config.DefaultWorker()
		c.Idempotency.Lease = lease
		if err := app.CheckDerived(c); !errors.Is(err, app.ErrBadConfig) || !strings.Contains(err.Error(), "idempotency") {
			t.Errorf("CheckDerived with idempotency.lease %v: %v, want ErrBadConfig naming idempotency", lease, err)
		}
	}
}
