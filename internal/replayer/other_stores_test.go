package replayer

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): the replayer never
// checked that the Redis stores it opens are the fleet's. Workers record
// their stores in the worker consumer's description (app.Connect: "stores
// id: <id>; stores: redis db=<n> prefix=<p>") and refuse a worker on other
// stores, but dlq-replayer pointed at the fleet's NATS with another
// redis.prefix (it defaults to "af:"; the fleet's is set in the workers'
// config) or another Redis db opened those other keys without a word.
// `show <invocation_id>` then printed the DLQ entry with "tool effects
// recorded (0): none" and no invocation record, for an invocation whose
// refund completed: on-call, told by the runbook's step 2 to check the
// effects before replaying, was told that nothing happened; the cooldown
// gate read keys no worker writes, so replays were not paused by the
// fleet-wide cooldown either. Now show, replay (its dry run too) and drain
// compare their stores with the worker consumer's record and refuse other
// stores (ErrOtherStores, exit 3), naming both.
func TestShowOnOtherRedisStoresSaysNoEffectsWithoutAWord(t *testing.T) {
	x := newFx(t, true)
	res := x.watchResults()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A worker process connects as the fleet's workers do: the worker
	// consumer records its stores (Redis, x.prefix, and the stores' id).
	// (The fixture's consumer records them too; app.Connect makes it here
	// as a fleet's worker does.)
	if err := x.js.DeleteConsumer(ctx, x.sc.RequestsStream, x.sc.WorkerConsumer); err != nil {
		t.Fatal(err)
	}
	wc := x.cfg.Worker()
	wc.Embedded.Enabled, wc.NATS.URL = false, x.url
	inf, err := app.Connect(ctx, wc, app.NewLogger(io.Discard, "error"))
	if err != nil {
		t.Fatal(err)
	}
	inf.Close()
	cons, err := x.js.Consumer(ctx, x.sc.RequestsStream, x.sc.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if d := cons.CachedInfo().Config.Description; !strings.Contains(d, x.prefix) {
		t.Fatalf("test setup: the worker consumer does not record the stores: %q", d)
	}

	// An outage: the even order's refund runs, then every request is
	// dead-lettered.
	var ids []string
	for i := range 2 {
		id := fmt.Sprintf("os-%d", i)
		ids = append(ids, id)
		x.submit(request(id, fmt.Sprintf("A-%d", 1001+i)))
	}
	w := x.startWorker("w-outage", &outage{healthy: simModel(t, ""), down: simModel(t, "server=1.0")})
	eventually(t, "every request dead-lettered", 30*time.Second, func() bool { return res.count(ids, envelope.StatusDeadLettered) == len(ids) })
	w.stop()
	if n := x.refundsByInvocation()["os-1"]; n != 1 {
		t.Fatalf("test setup: os-1 refunded %d times before the failure, want 1", n)
	}
	good := x.run(ctx, nil, "show", "os-1").must(t, ExitOK, "show on the fleet's stores")
	contains(t, good.stdout, "refund_order completed", "ALREADY DONE")

	// On-call's replayer: the fleet's NATS and Redis, but another prefix
	// (a fresh one: nothing of the fleet is there).
	_, other := redistest.Client(t)
	out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_PREFIX": other}, "show", "os-1")
	if out.code == ExitOK && !strings.Contains(out.stdout, "WARNING") {
		t.Fatalf("show on stores that are not the fleet's (prefix %q, the fleet's %q) exits 0 and reports no effect, "+
			"no record and no problem for an invocation whose refund completed:\n%s", other, x.prefix, out.stdout)
	}
	// Refused as a configuration error, naming both stores; the dry run and
	// drain (whose cooldown gate reads the stores) too.
	out.must(t, ExitUsage, "show on other stores")
	contains(t, out.stderr, "prefix="+x.prefix+" id=", "prefix="+other, "not the fleet's stores")
	if out.stdout != "" {
		t.Fatalf("show on other stores printed:\n%s", out.stdout)
	}
	for _, args := range [][]string{{"replay", "--dry-run"}, {"replay", "--yes"}, {"drain", "--metrics-addr", ""}} {
		r := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_PREFIX": other}, args...).must(t, ExitUsage, strings.Join(args, " ")+" on other stores")
		contains(t, r.stderr, "prefix="+other)
	}
	// A replayer never mints a stores id: the other prefix still has none.
	if n, err := x.rdb.Exists(ctx, other+app.StoresIDKey).Result(); err != nil || n != 0 {
		t.Fatalf("the replayer created %s%s (exists %d, %v)", other, app.StoresIDKey, n, err)
	}
}

// setWorkerStores rewrites the stores the worker consumer records (as a
// worker of stores would; "" records none).
func setWorkerStores(t *testing.T, x *fx, stores string) {
	t.Helper()
	ctx := ctxT(t)
	cons, err := x.js.Consumer(ctx, x.sc.RequestsStream, x.sc.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	cc := cons.CachedInfo().Config
	cc.Description = streams.WorkerConsumerDescription(x.sc.WorkerConsumerConfig().Description, stores)
	if _, err := x.js.UpdateConsumer(ctx, x.sc.RequestsStream, cc); err != nil {
		t.Fatal(err)
	}
}

// TestStoresCheck covers the other cases of the stores check (see
// TestShowOnOtherRedisStoresSaysNoEffectsWithoutAWord): stores that match
// pass without a word; another Redis server (another id), a Redis whose id
// is missing, NATS KV for a fleet on Redis and Redis for a fleet on NATS KV
// are refused (exit 3); a consumer that records no stores, or a Redis store
// without its id (earlier-version workers), or no worker consumer at all,
// cannot be checked: a warning, and the command runs.
func TestStoresCheck(t *testing.T) {
	ctx := ctxT(t)
	t.Run("fleet's stores", func(t *testing.T) {
		for _, redis := range []bool{false, true} {
			x := newFx(t, redis)
			x.seed("ok", 1, "SERVER", 0)
			out := x.run(ctx, nil, "replay", "--dry-run").must(t, ExitOK, "dry run")
			if strings.Contains(out.stderr, "warning") {
				t.Fatalf("redis %v: the fleet's own stores warned: %s", redis, out.stderr)
			}
		}
	})
	t.Run("another Redis server", func(t *testing.T) {
		x := newFx(t, true)
		x.seed("srv", 1, "SERVER", 0)
		setWorkerStores(t, x, app.RedisStoresIdentity(x.cfg.Worker(), "0123456789abcdef"))
		out := x.run(ctx, nil, "show", "srv-0").must(t, ExitUsage, "show")
		contains(t, out.stderr, "id=0123456789abcdef", "not the fleet's stores")
	})
	t.Run("no id in this Redis", func(t *testing.T) {
		x := newFx(t, true)
		x.seed("noid", 1, "SERVER", 0)
		key := x.prefix + app.StoresIDKey
		if err := x.rdb.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		out := x.run(ctx, nil, "replay", "--dry-run").must(t, ExitUsage, "dry run")
		// Both possibilities: other stores, or the fleet's Redis lost its
		// data (found in review, nineteenth session).
		contains(t, out.stderr, "no stores id at "+key, "no worker ever used these stores", "lost its data")
		if n, err := x.rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("the replayer set the stores id %s (exists %d, %v)", key, n, err)
		}
	})
	t.Run("NATS KV replayer, fleet on Redis", func(t *testing.T) {
		x := newFx(t, true)
		out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": ""}, "replay", "--dry-run").must(t, ExitUsage, "dry run")
		contains(t, out.stderr, `this replayer's are "nats-kv"`, "--redis-url")
	})
	t.Run("Redis replayer, fleet on NATS KV", func(t *testing.T) {
		x := newFx(t, false)
		_, prefix := redistest.Client(t)
		out := x.run(ctx, map[string]string{"AGENTFLEET_REDIS_URL": redistest.URL(), "AGENTFLEET_REDIS_PREFIX": prefix},
			"replay", "--dry-run").must(t, ExitUsage, "dry run")
		contains(t, out.stderr, `record the stores "nats-kv"`, "without redis.url")
	})
	t.Run("no record", func(t *testing.T) {
		x := newFx(t, true)
		x.seed("norec", 1, "SERVER", 0)
		setWorkerStores(t, x, "")
		out := x.run(ctx, nil, "replay", "--dry-run").must(t, ExitOK, "dry run")
		contains(t, out.stderr, "warning", "records no stores")
		contains(t, out.stdout, "would replay 1")
	})
	t.Run("record without id", func(t *testing.T) {
		x := newFx(t, true)
		x.seed("legacy", 1, "SERVER", 0)
		setWorkerStores(t, x, app.StoresIdentity(x.cfg.Worker()))
		out := x.run(ctx, nil, "show", "legacy-0").must(t, ExitOK, "show")
		contains(t, out.stderr, "warning", "without their id")
		// Another prefix is refused all the same.
		_, other := redistest.Client(t)
		x.run(ctx, map[string]string{"AGENTFLEET_REDIS_PREFIX": other}, "show", "legacy-0").must(t, ExitUsage, "show on another prefix")
	})
	t.Run("no worker consumer", func(t *testing.T) {
		x := newFx(t, true)
		x.seed("nocons", 1, "SERVER", 0)
		if err := x.js.DeleteConsumer(ctx, x.sc.RequestsStream, x.sc.WorkerConsumer); err != nil {
			t.Fatal(err)
		}
		out := x.run(ctx, nil, "show", "nocons-0").must(t, ExitOK, "show")
		contains(t, out.stderr, "warning", "no worker consumer")
	})
}
