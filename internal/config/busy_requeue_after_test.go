package config_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/config"
)

// worker.busy_requeue_after (twentieth session: the requeue of a busy
// session's message had no key): default 3, settable from the
// environment, negative turns the requeue off, and 1 (a requeue with no
// wait, a spin) is refused naming the key.
func TestBusyRequeueAfterKey(t *testing.T) {
	if got := config.DefaultWorker().Worker.BusyRequeueAfter; got != 3 {
		t.Fatalf("default worker.busy_requeue_after = %d, want 3", got)
	}
	for _, tc := range []struct {
		v       string
		want    int
		refused bool
	}{{"-1", -1, false}, {"5", 5, false}, {"1", 1, true}} {
		env := map[string]string{"AGENTFLEET_WORKER_BUSY_REQUEUE_AFTER": tc.v, "AGENTFLEET_NATS_URL": "nats://127.0.0.1:4222"}
		cfg, err := config.LoadWorker(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
		if tc.refused {
			if err == nil || !strings.Contains(err.Error(), "worker.busy_requeue_after") {
				t.Errorf("busy_requeue_after %s: error %v, want a refusal naming worker.busy_requeue_after", tc.v, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("busy_requeue_after %s: %v", tc.v, err)
		}
		if cfg.Worker.BusyRequeueAfter != tc.want {
			t.Errorf("busy_requeue_after %s read as %d", tc.v, cfg.Worker.BusyRequeueAfter)
		}
	}
}
