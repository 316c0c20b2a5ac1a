package app

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
)

// Regression (found in review, sixteenth session): cmd/worker documents "2 bad flags or configuration" (WorkerMain: "2 bad
// flags or configuration"; ErrBadConfig: "a start-up failure that the
// configuration or the environment causes ... the worker exits 2 for it,
// ... not 1"). Two configuration refusals that Connect makes against the
// live server still exit 1, which a supervisor restarts for ever instead
// of reporting a broken configuration:
//   - checkLiveDLQ: "config: idempotency.retention ... does not outlive the
//     live DLQ stream" (the replayer refuses the same with its exit 2);
//   - streams.Apply's *streams.ConfigError for a subject prefix that differs
//     from the live stream's (README: "Apply now refuses it with a
//     configuration error").
func TestLiveConfigurationRefusalsExitTwo(t *testing.T) {
	js, _, srv := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config.DefaultWorker()
	cfg.Embedded.Enabled, cfg.NATS.URL = false, srv.ClientURL()
	inf, err := Connect(ctx, cfg, NewLogger(io.Discard, "error"))
	if err != nil {
		t.Fatal(err)
	}
	inf.Close()

	t.Setenv("AGENTFLEET_NATS_URL", srv.ClientURL())
	t.Setenv("AGENTFLEET_METRICS_ADDR", "")
	t.Setenv("AGENTFLEET_LOG_LEVEL", "error")
	run := func(t *testing.T) (int, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- WorkerMain([]string{"--name", "w-review-exit"}, &out, &errOut) }()
		select {
		case code := <-done:
			return code, errOut.String()
		case <-time.After(60 * time.Second):
			t.Fatal("the worker started and ran")
			return 0, ""
		}
	}

	t.Run("prefix differs from the live stream", func(t *testing.T) {
		t.Setenv("AGENTFLEET_STREAMS_REQUEST_PREFIX", "staging.requests")
		if code, stderr := run(t); code != 2 {
			t.Errorf("a request prefix the live stream does not have: exit code %d, want 2 (bad configuration); stderr: %s", code, stderr)
		}
	})

	t.Run("retention shorter than the live DLQ", func(t *testing.T) {
		s, err := js.Stream(ctx, "AGENT_DLQ")
		if err != nil {
			t.Fatal(err)
		}
		sc := s.CachedInfo().Config
		sc.MaxAge = 30 * 24 * time.Hour
		if _, err := js.UpdateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
		if code, stderr := run(t); code != 2 {
			t.Errorf("a 15-day retention against the live 30-day DLQ: exit code %d, want 2 (bad configuration); stderr: %s", code, stderr)
		}
	})
}
