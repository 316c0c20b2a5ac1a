package app_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
)

// A worker never shortens the live DLQ stream (that would drop dead
// letters), and refuses to start while its idempotency records would expire
// before those dead letters, whose replay could then repeat effects: on
// Redis its configured retention counts, on NATS KV the bucket's (which a
// worker with a longer retention raises for every worker after it).
func TestWorkerChecksRetentionAgainstTheLiveDLQ(t *testing.T) {
	const day = 24 * time.Hour
	for _, mode := range []string{"nats-kv", "redis"} {
		t.Run(mode, func(t *testing.T) {
			js, _, srv := natstest.JetStream(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var prefix string
			if mode == "redis" {
				_, prefix = redistest.Client(t)
			}
			connect := func(dlq, retention time.Duration) error {
				t.Helper()
				cfg := config.DefaultWorker()
				cfg.Embedded.Enabled, cfg.NATS.URL, cfg.Redis.URL = false, srv.ClientURL(), ""
				if mode == "redis" {
					cfg.Redis.URL, cfg.Redis.Prefix = redistest.URL(), prefix
				}
				if dlq > 0 {
					cfg.Streams.DLQMaxAge, cfg.Idempotency.Retention = dlq, retention
				}
				inf, err := app.Connect(ctx, cfg, app.NewLogger(io.Discard, "error"))
				if err == nil {
					inf.Close()
				}
				return err
			}
			dlqAge := func() time.Duration {
				s, err := js.Stream(ctx, "AGENT_DLQ")
				if err != nil {
					t.Fatal(err)
				}
				return s.CachedInfo().Config.MaxAge
			}
			if err := connect(0, 0); err != nil { // defaults: DLQ 14 days, retention 15
				t.Fatal(err)
			}
			s, err := js.Stream(ctx, "AGENT_DLQ")
			if err != nil {
				t.Fatal(err)
			}
			sc := s.CachedInfo().Config
			sc.MaxAge = 30 * day // as a worker of a 30-day fleet, or an operator, sets it
			if _, err := js.UpdateStream(ctx, sc); err != nil {
				t.Fatal(err)
			}
			err = connect(0, 0)
			if err == nil || !strings.Contains(err.Error(), "live DLQ stream AGENT_DLQ, which keeps entries 720h0m0s") ||
				!strings.Contains(err.Error(), "at least 744h0m0s") {
				t.Fatalf("a 15-day retention against the live 30-day DLQ: %v", err)
			}
			if got := dlqAge(); got != 30*day {
				t.Fatalf("the refused worker left the DLQ at %v, want 720h", got)
			}
			// A 14-day DLQ in the configuration does not shorten it either;
			// a 31-day retention outlives it.
			if err := connect(14*day, 31*day); err != nil {
				t.Fatalf("a retention that outlives the live DLQ was refused: %v", err)
			}
			if got := dlqAge(); got != 30*day {
				t.Fatalf("a 14-day configuration shortened the DLQ to %v", got)
			}
			if mode == "nats-kv" {
				// That worker raised the bucket to 31 days; it now counts for
				// a worker on the defaults too.
				if err := connect(0, 0); err != nil {
					t.Fatalf("the 31-day bucket outlives the DLQ, yet: %v", err)
				}
			}
		})
	}
}
