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
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
)

// A worker on the defaults (streams.replicas 1) joining a fleet whose
// streams and buckets are R3 (a real three-node cluster) leaves every one of
// them at three copies and says so for each stream, instead of scaling the
// fleet down to one copy.
func TestWorkerKeepsTheFleetsReplicas(t *testing.T) {
	js, servers := natstest.ClusterJetStream(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(cfg config.Worker) string {
		t.Helper()
		cfg.Embedded.Enabled, cfg.NATS.URL, cfg.Redis.URL = false, servers[0].ClientURL(), ""
		var logs bytes.Buffer
		natstest.Retry(t, time.Minute, func(ctx context.Context) error {
			logs.Reset()
			inf, err := app.Connect(ctx, cfg, app.NewLogger(&logs, "info"))
			if err != nil {
				return err
			}
			inf.Close()
			return nil
		})
		return logs.String()
	}
	fleet := config.DefaultWorker()
	fleet.Streams.Replicas = 3
	if logs := connect(fleet); strings.Contains(logs, "kept them") {
		t.Errorf("the fleet's own worker was warned:\n%s", logs)
	}
	logs := connect(config.DefaultWorker())

	names := []string{streams.DefaultRequestsStream, streams.DefaultResultsStream, streams.DefaultDLQStream}
	for _, n := range names {
		if !strings.Contains(logs, `"stream":"`+n+`"`) {
			t.Errorf("no warning for stream %s in:\n%s", n, logs)
		}
	}
	for _, b := range []string{natskv.DefaultBucket, natssession.DefaultSessionBucket, natssession.DefaultLockBucket, natssession.DefaultInvocationBucket} {
		names = append(names, "KV_"+b)
	}
	for _, n := range names {
		s, err := js.Stream(ctx, n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("%s has %d replicas after a worker on the defaults, want 3 kept", n, r)
		}
	}
}
