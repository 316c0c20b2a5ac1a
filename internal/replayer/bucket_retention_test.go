package replayer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/support"
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
// It now opens the buckets as they are: it neither lowers nor raises them.
func TestReplayerLeavesTheFleetsBucketsAsTheyAre(t *testing.T) {
	cases := []struct {
		name          string
		fleet, dlq    time.Duration // the workers' retention and DLQ max age
		replayerEnv   map[string]string
		wantMaxAgeDay time.Duration
	}{
		{"a shorter replayer does not lower", 31 * day, 30 * day, nil, 31},
		{"a longer replayer does not raise", 15 * day, 14 * day, map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "744h"}, 15},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newFx(t, false)
			ctx := ctxT(t)
			fleet := x.cfg.Worker()
			fleet.Streams.DLQMaxAge, fleet.Idempotency.Retention = tc.dlq, tc.fleet
			if _, err := app.OpenStores(ctx, fleet, x.js, nil); err != nil {
				t.Fatal(err)
			}
			x.setDLQMaxAge(ctx, tc.dlq)
			x.seed("keep", 1, "SERVER", 0)
			for _, args := range [][]string{{"show", "keep-0"}, {"replay", "--yes", "--rate", "0"}} {
				out := x.run(ctx, tc.replayerEnv, args...)
				if out.code != ExitOK {
					t.Fatalf("%v: exit %d\n%s%s", args, out.code, out.stdout, out.stderr)
				}
			}
			for _, b := range []string{natskv.DefaultBucket, natssession.DefaultInvocationBucket} {
				if got := natstest.BucketMaxAge(t, x.js, b); got != tc.wantMaxAgeDay*day {
					t.Errorf("%s max age %v after the replayer ran, want the fleet's %v", b, got, tc.wantMaxAgeDay*day)
				}
			}
		})
	}
}

// The replayer checks the records' retention against the DLQ stream's max
// age on the server, not only against the DLQ max age in its own
// configuration (on Redis its configured retention, a mirror of the
// workers'; on NATS KV the bucket's): replay, also --dry-run, refuses with
// exit 2 and says what to change; show reports it and goes on.
func TestReplayerChecksRetentionAgainstTheLiveDLQ(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		x := newFx(t, true)
		ctx := ctxT(t)
		x.setDLQMaxAge(ctx, 30*day)
		x.seed("ret", 1, "SERVER", 0)
		for _, args := range [][]string{{"replay", "--dry-run"}, {"replay", "--yes"}} {
			out := x.run(ctx, nil, args...)
			if out.code != ExitHalted || !strings.Contains(out.stderr, "must mirror the workers'") || !strings.Contains(out.stderr, "at least 744h") {
				t.Fatalf("%v with a 15-day retention against a 30-day DLQ: exit %d\n%s", args, out.code, out.stderr)
			}
		}
		if got := x.dlqIDs(); len(got) != 1 {
			t.Fatalf("the refused replay changed the DLQ: %v", got)
		}
		sh := x.run(ctx, nil, "show", "ret-0")
		if sh.code != ExitOK || !strings.Contains(sh.stdout, "replay safety") {
			t.Fatalf("show: exit %d, no retention problem reported:\n%s%s", sh.code, sh.stdout, sh.stderr)
		}
		out := x.run(ctx, map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "744h"}, "replay", "--dry-run")
		if out.code != ExitOK {
			t.Fatalf("a 31-day retention was refused: exit %d\n%s", out.code, out.stderr)
		}
	})
	t.Run("nats-kv", func(t *testing.T) {
		x := newFx(t, false) // the buckets keep 15 days
		ctx := ctxT(t)
		x.setDLQMaxAge(ctx, 30*day)
		// The replayer's own 744h does not count: the bucket decides.
		env := map[string]string{"AGENTFLEET_IDEMPOTENCY_RETENTION": "744h"}
		for _, args := range [][]string{{"replay", "--dry-run"}, {"drain", "--metrics-addr", ""}} {
			out := x.run(ctx, env, args...)
			if out.code != ExitHalted || !strings.Contains(out.stderr, "NATS KV bucket AGENT_IDEMPOTENCY keeps idempotency records 360h0m0s") ||
				!strings.Contains(out.stderr, "Raise the workers' idempotency.retention to at least 744h0m0s") {
				t.Fatalf("%v with a 15-day bucket against a 30-day DLQ: exit %d\n%s", args, out.code, out.stderr)
			}
		}
		if got := natstest.BucketMaxAge(t, x.js, natskv.DefaultBucket); got != 15*day {
			t.Fatalf("bucket max age %v, want 360h unchanged", got)
		}
		// A bucket that keeps records until they are deleted outlives any DLQ.
		kv, err := x.js.KeyValue(ctx, natskv.DefaultBucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cfg := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
		cfg.MaxAge = 0
		if _, err := x.js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if out := x.run(ctx, nil, "replay", "--dry-run"); out.code != ExitOK {
			t.Fatalf("a bucket without a max age was refused: exit %d\n%s", out.code, out.stderr)
		}
	})
}

// OpenExistingStores creates no bucket: a replayer pointed at a server
// where no NATS-only fleet ran (a fleet on Redis, with redis.url missing
// here) says so instead of answering from empty stores it made; that holds
// for each bucket, down to the demo orders' (the last one opened).
func TestOpenExistingStoresCreatesNoBucket(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx := ctxT(t)
	cfg := config.DefaultReplayer().Worker()
	_, err := app.OpenExistingStores(ctx, cfg, js, nil)
	if err == nil || !strings.Contains(err.Error(), "redis.url") {
		t.Fatalf("err = %v, want a missing bucket naming redis.url", err)
	}
	for name := range js.KeyValueStoreNames(ctx).Name() {
		t.Errorf("bucket %s was created", name)
	}
	if _, err := app.OpenStores(ctx, cfg, js, nil); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, support.RefundsBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := app.OpenExistingStores(ctx, cfg, js, nil); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("err = %v, want the missing %s", err, support.RefundsBucket)
	}
	if _, err := js.KeyValue(ctx, support.RefundsBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("%s was created: %v", support.RefundsBucket, err)
	}
}
