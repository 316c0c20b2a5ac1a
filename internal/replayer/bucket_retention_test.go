package replayer

import (
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

const day = 24 * time.Hour

// setDLQMaxAge sets the live DLQ stream's max age, as workers configured
// with streams.dlq_max_age do.
func (x *fx) setDLQMaxAge(ctx context.Context, d time.Duration) {
	x.t.Helper()
	s, err := x.js.Stream(ctx, x.sc.DLQStream)
	if err != nil {
		x.t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxAge = d
	if _, err := x.js.UpdateStream(ctx, cfg); err != nil {
		x.t.Fatal(err)
	}
}

// A NATS-only fleet keeps idempotency and invocation records 31 days (its
// DLQ 30). A replayer on its defaults (retention 15 days) used to reconfigure
// both buckets to 15 days when it opened the stores, so a replay of a
// 20-day-old dead letter found its refund's record gone and refunded again.
// It now opens the buckets as they are, and checks the bucket's own
// retention against the live DLQ.
func TestReplayerLeavesTheFleetsBucketsAsTheyAre(t *testing.T) {
	x := newFx(t, false)
	ctx := ctxT(t)
	fleet := x.cfg.Worker()
	fleet.Streams.DLQMaxAge, fleet.Idempotency.Retention = 30*day, 31*day
	if _, err := app.OpenStores(ctx, fleet, x.js, nil); err != nil {
		t.Fatal(err)
	}
	x.setDLQMaxAge(ctx, 30*day)
	x.seed("keep", 1, "SERVER", 0)
	for _, args := range [][]string{{"show", "keep-0"}, {"replay", "--yes", "--rate", "0"}} {
		out := x.run(ctx, nil, args...)
		if out.code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, out.code, out.stdout, out.stderr)
		}
	}
	for _, b := range []string{natskv.DefaultBucket, natssession.DefaultInvocationBucket} {
		if got := natstest.BucketMaxAge(t, x.js, b); got != 31*day {
			t.Errorf("%s max age %v after the replayer ran, want the fleet's 744h", b, got)
		}
	}
}

// The replayer checks the records' retention against the DLQ stream's max
// age on the server, not only against the DLQ max age in its own
// configuration: on Redis its configured retention, on NATS KV the bucket's.
func TestReplayerChecksRetentionAgainstTheLiveDLQ(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		x := newFx(t, true)
		ctx := ctxT(t)
		x.setDLQMaxAge(ctx, 30*day)
		out := x.run(ctx, nil, "show", "nobody")
		if out.code != ExitError || !strings.Contains(out.stderr, "live DLQ stream") {
			t.Fatalf("a 15-day retention against a 30-day DLQ: exit %d\n%s", out.code, out.stderr)
		}
		out = x.run(ctx, map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "744h"}, "show", "nobody")
		if strings.Contains(out.stderr, "live DLQ stream") {
			t.Fatalf("a 31-day retention was refused:\n%s", out.stderr)
		}
	})
	t.Run("nats-kv", func(t *testing.T) {
		x := newFx(t, false) // the buckets keep 15 days
		ctx := ctxT(t)
		x.setDLQMaxAge(ctx, 30*day)
		// The replayer's own 744h does not count: the bucket decides.
		out := x.run(ctx, map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "744h"}, "show", "nobody")
		if out.code != ExitError || !strings.Contains(out.stderr, "live DLQ stream") {
			t.Fatalf("a 15-day bucket against a 30-day DLQ: exit %d\n%s", out.code, out.stderr)
		}
		if got := natstest.BucketMaxAge(t, x.js, natskv.DefaultBucket); got != 15*day {
			t.Fatalf("bucket max age %v, want 360h unchanged", got)
		}
	})
}

// OpenExistingStores creates no bucket: a replayer pointed at a server
// where no NATS-only fleet ran (a fleet on Redis, with redis.url missing
// here) says so instead of answering from empty stores it made.
func TestOpenExistingStoresCreatesNoBucket(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := ctxT(t)
	_, err := app.OpenExistingStores(ctx, config.DefaultReplayer().Worker(), js, nil)
	if err == nil || !strings.Contains(err.Error(), "redis.url") {
		t.Fatalf("err = %v, want a missing bucket naming redis.url", err)
	}
	for name := range js.KeyValueStoreNames(ctx).Name() {
		t.Errorf("bucket %s was created", name)
	}
}
