package app_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Regression (found in review, nineteenth session): the worker consumer records its workers' stores so that a worker on other
// stores is refused (ErrStoresDiffer, exit 2): "a request redelivered from
// one to the other would run its effects again, because the second store
// knows nothing of the first's keys". StoresIdentity names Redis stores by
// "redis db=<n> prefix=<p>" only, without anything that tells one Redis
// server from another. A worker pointed at another Redis server (a
// migration to a new Redis, one deployment whose redis.url names its own
// local Redis) with the default db and prefix records the same identity,
// joins the fleet's consumer, and a request redelivered from a worker on
// the first Redis to it finds no idempotency record and no invocation
// record: its refund runs again. Correct: a worker whose Redis is another
// server is refused like one with another prefix (for instance by
// recording an id the stores keep in Redis itself, so that two names of
// one server still agree). Connect now records "redis db=<n> prefix=<p>
// id=<id>", the id kept in Redis at <prefix>stores:id.
func TestWorkerOnAnotherRedisServerIsRefused(t *testing.T) {
	other := startSecondRedis(t)
	s := natstest.RunServer(t)
	_, prefix := redistest.Client(t)
	if err := startOnRedis(t, "w-first-redis", s.ClientURL(), redistest.URL(), prefix); err != nil {
		t.Fatal(err)
	}
	err := startOnRedis(t, "w-second-redis", s.ClientURL(), other, prefix)
	if !errors.Is(err, app.ErrBadConfig) {
		t.Errorf("a worker on another Redis server (%s, same db and prefix) joined the fleet's consumer (err = %v): stores identities %q and %q; want it refused (ErrBadConfig)",
			other, err, app.StoresIdentity(config.Worker{Redis: config.Redis{URL: redistest.URL(), Prefix: prefix}}),
			app.StoresIdentity(config.Worker{Redis: config.Redis{URL: other, Prefix: prefix}}))
	}
}

// startSecondRedis starts a Redis server of the test's own on a free port
// (no persistence, in a temporary directory) and returns its URL; it is
// stopped when the test ends.
func startSecondRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The server says when it accepts connections: wait for that line (and
	// read its log to the end, so it never blocks on a full pipe).
	ready, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for signalled := false; sc.Scan(); {
			if !signalled && strings.Contains(sc.Text(), "Ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("the second redis-server on port %d exited before it was ready", port)
	case <-time.After(10 * time.Second):
		t.Fatalf("the second redis-server on port %d is not ready after 10s", port)
	}
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	opts, _ := redis.ParseURL(url)
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the second redis-server on port %d does not answer: %v", port, err)
	}
	return url
}

// startOnRedis starts a worker of the fleet on NATS server natsURL with its
// stores on redisURL under prefix; it stops when the test ends.
func startOnRedis(t *testing.T, name, natsURL, redisURL, prefix string) error {
	t.Helper()
	cfg := config.DefaultWorker()
	cfg.NATS.URL = natsURL
	cfg.Embedded.Enabled = false
	cfg.Redis.URL, cfg.Redis.Prefix, cfg.Redis.DemoPrefix = redisURL, prefix, prefix
	cfg.MetricsAddr = ""
	cfg.LogLevel = "error"
	cfg.Worker.Name = name
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.StartWorker(ctx, cfg, func(string) string { return "" }, io.Discard)
	if err != nil {
		cancel()
		return err
	}
	t.Cleanup(func() { cancel(); _ = r.Wait() })
	return nil
}

// redisFleet is a fleet's NATS server (embedded) and the configuration of
// its workers, whose stores are on the test's Redis under a prefix of the
// test's own.
type redisFleet struct {
	js     jetstream.JetStream
	url    string         // the NATS server's
	rdb    *redis.Client  // the test's Redis
	prefix string         // the stores' prefix
	cfg    config.Worker  // the workers' (Redis URL and prefix set)
	sc     streams.Config // the fleet's streams
}

func newRedisFleet(t *testing.T) *redisFleet {
	t.Helper()
	js, _, s := natstest.JetStream(t)
	rdb, prefix := redistest.Client(t)
	cfg := config.DefaultWorker()
	cfg.Redis.URL, cfg.Redis.Prefix = redistest.URL(), prefix
	return &redisFleet{js: js, url: s.ClientURL(), rdb: rdb, prefix: prefix, cfg: cfg, sc: app.StreamsConfig(cfg)}
}

// start starts a worker of the fleet with its stores on redisURL under the
// fleet's prefix (startOnRedis).
func (f *redisFleet) start(t *testing.T, name, redisURL string) error {
	t.Helper()
	return startOnRedis(t, name, f.url, redisURL, f.prefix)
}

// storesID is the stores' id the fleet's workers keep in Redis.
func (f *redisFleet) storesID(ctx context.Context, t *testing.T) string {
	t.Helper()
	id, err := f.rdb.Get(ctx, f.prefix+app.StoresIDKey).Result()
	if err != nil {
		t.Fatalf("no stores id in Redis at %s: %v", f.prefix+app.StoresIDKey, err)
	}
	return id
}

// recordedStores is what the fleet's worker consumer records as its
// workers' stores.
func (f *redisFleet) recordedStores(ctx context.Context, t *testing.T) string {
	t.Helper()
	cons, err := f.js.Consumer(ctx, f.sc.RequestsStream, f.sc.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	return streams.WorkerStoresOf(cons.CachedInfo().Config.Description)
}

// Two names of one Redis server (an IP address and a hostname, a
// service name and its address) are the same stores: the id is read from
// the server, so the second worker joins.
func TestWorkerOnTheSameRedisByAnotherNameJoins(t *testing.T) {
	s := natstest.RunServer(t)
	_, prefix := redistest.Client(t)
	first := redistest.URL()
	second := strings.Replace(first, "127.0.0.1", "localhost", 1)
	if second == first {
		second = strings.Replace(first, "localhost", "127.0.0.1", 1)
	}
	if second == first {
		t.Skipf("REDIS_URL %s names neither 127.0.0.1 nor localhost", first)
	}
	if err := startOnRedis(t, "w-by-ip", s.ClientURL(), first, prefix); err != nil {
		t.Fatal(err)
	}
	if err := startOnRedis(t, "w-by-name", s.ClientURL(), second, prefix); err != nil {
		t.Errorf("a worker on the same Redis by another name (%s, then %s) was refused: %v", first, second, err)
	}
}

// Upgrading a fleet: its worker consumer records the stores as workers of
// earlier versions did ("redis db=<n> prefix=<p>", no id). The first
// worker of this version on the same db and prefix adopts that record and
// rewrites it with its Redis's id (the fleet is not locked out of its own
// consumer); from then on a worker on another Redis server is refused,
// and an earlier record of another prefix is still refused.
func TestEarlierStoresRecordIsAdopted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newRedisFleet(t)
	sc := f.sc
	legacy := app.StoresIdentity(f.cfg)
	if strings.Contains(legacy, "id=") {
		t.Fatalf("StoresIdentity %q is not the earlier format", legacy)
	}
	sc.WorkerStores = legacy
	if _, err := streams.Ensure(ctx, f.js, sc); err != nil {
		t.Fatal(err)
	}

	if err := f.start(t, "w-upgraded", redistest.URL()); err != nil {
		t.Fatalf("the first worker of this version on the fleet's own Redis was refused by the earlier record %q: %v", legacy, err)
	}
	id := f.storesID(ctx, t)
	if got, want := f.recordedStores(ctx, t), app.RedisStoresIdentity(f.cfg, id); got != want {
		t.Errorf("the consumer records %q after the upgrade, want %q", got, want)
	}
	if err := f.start(t, "w-upgraded-2", redistest.URL()); err != nil {
		t.Errorf("a second worker of the fleet after the upgrade: %v", err)
	}
	if err := f.start(t, "w-other-server", startSecondRedis(t)); !errors.Is(err, app.ErrBadConfig) {
		t.Errorf("after the upgrade a worker on another Redis server: err = %v, want ErrBadConfig", err)
	}

	// An earlier record of another prefix is other stores.
	js2, _, s2 := natstest.JetStream(t)
	other := f.cfg
	other.Redis.Prefix = f.prefix + "blue:"
	sc.WorkerStores = app.StoresIdentity(other)
	if _, err := streams.Ensure(ctx, js2, sc); err != nil {
		t.Fatal(err)
	}
	if err := startOnRedis(t, "w-earlier-other-prefix", s2.ClientURL(), redistest.URL(), f.prefix); !errors.Is(err, app.ErrBadConfig) {
		t.Errorf("a worker on prefix %q against an earlier record of %q: err = %v, want ErrBadConfig", f.prefix, other.Redis.Prefix, err)
	}
}
