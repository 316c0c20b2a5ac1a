package app_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
)

// Regression (found in review, twenty-second session): on the NATS KV
// stores a worker.session_lease longer than the session lock bucket's max
// age (24h) started a worker whose every Acquire failed: each request was
// Nak'ed as an infrastructure failure for ever, never dead-lettered, while
// /readyz said ready. The worker now exits 2 at start naming the setting.
func TestSessionLeaseOverLockBucketMaxAgeExitsTwo(t *testing.T) {
	t.Setenv("AGENTFLEET_EMBEDDED_PORT", "-1")
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
	t.Setenv("AGENTFLEET_WORKER_SESSION_LEASE", "25h")
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- app.WorkerMain([]string{"--name", "w-long-lease", "--data-dir", t.TempDir()}, &out, &errOut)
	}()
	select {
	case code := <-done:
		if code != 2 || !strings.Contains(errOut.String(), "worker.session_lease") {
			t.Errorf("exit code %d, want 2 naming worker.session_lease; stderr: %s", code, errOut.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker started and ran with a lease no lock can hold")
	}
}
