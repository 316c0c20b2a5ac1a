package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// A NATS-only worker whose retention is shorter than the fleet's buckets
// keeps them (workers never lower them) and says so in its log, naming each
// bucket, so that an operator who meant to shorten them knows how.
func TestWorkerWarnsOfLongerBuckets(t *testing.T) {
	js, _, srv := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fleet := config.DefaultWorker()
	fleet.Streams.DLQMaxAge, fleet.Idempotency.Retention = 30*24*time.Hour, 31*24*time.Hour
	if _, err := app.OpenStores(ctx, fleet, js, nil); err != nil {
		t.Fatal(err)
	}
	open := func(cfg config.Worker) string {
		t.Helper()
		cfg.Embedded.Enabled, cfg.NATS.URL, cfg.Redis.URL = false, srv.ClientURL(), ""
		var logs bytes.Buffer
		inf, err := app.Connect(ctx, cfg, app.NewLogger(&logs, "info"))
		if err != nil {
			t.Fatal(err)
		}
		inf.Close()
		return logs.String()
	}
	logs := open(config.DefaultWorker())
	for _, b := range []string{natskv.DefaultBucket, natssession.DefaultInvocationBucket} {
		if got := natstest.BucketMaxAge(t, js, b); got != 31*24*time.Hour {
			t.Fatalf("%s max age %v, want 744h kept", b, got)
		}
		if !strings.Contains(logs, `"bucket":"`+b+`"`) || !strings.Contains(logs, "nats stream edit KV_"+b) {
			t.Errorf("no warning for %s in:\n%s", b, logs)
		}
	}
	if logs := open(fleet); strings.Contains(logs, "keeps records longer") {
		t.Errorf("a worker with the fleet's retention was warned:\n%s", logs)
	}
}
