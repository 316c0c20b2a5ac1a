package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/kvbucket"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
	"github.com/agentfleet/agentfleet/pkg/idempotency/redisstore"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
)

// Stores are the fleet's state: sessions, locks, invocation records,
// idempotency records, the cooldown and the demo orders service.
type Stores struct {
	// Mode is "redis" or "nats-kv".
	Mode        string
	Sessions    session.Service         // Sessions stores the agent sessions.
	Locker      session.Locker          // Locker is the per-session lock.
	Invocations session.InvocationStore // Invocations stores the invocation records.
	// Gate enters and finishes invocations over Locker and Invocations
	// (one round trip each on a standalone Redis).
	Gate        session.Gate
	Idempotency idempotency.Store // Idempotency stores the tools' idempotency records.
	// IdempotencyRetention is how long completed idempotency records are
	// kept: on NATS KV the bucket's max age as opened (0: until deleted),
	// on Redis the configured retention (each Complete sets it).
	IdempotencyRetention time.Duration
	// Cooldown is shared by the fleet on Redis; with NATS KV it is per
	// process (a documented limit of the NATS-only mode).
	Cooldown cooldown.Store
	// Orders is the demo orders service whose refunds are real effects.
	Orders support.Orders
	// Refunds lists the executed demo refunds.
	Refunds func(ctx context.Context) ([]support.Refund, error)
	// Ping checks that the stores answer (for /readyz).
	Ping func(ctx context.Context) error
}

// OpenStores opens the Redis stores when rdb is non-nil, else the NATS KV
// stores on js, creating or updating their buckets (never lowering the max
// age of the idempotency and invocation buckets): what a worker does.
func OpenStores(ctx context.Context, cfg config.Worker, js jetstream.JetStream, rdb redis.UniversalClient) (*Stores, error) {
	if rdb != nil {
		return openRedisStores(cfg, rdb)
	}
	return openNATSStores(ctx, cfg, js, false)
}

// OpenExistingStores is OpenStores for a process that does not own the
// stores (dlq-replayer): the NATS KV buckets are opened as they are, never
// created or reconfigured, so a replayer whose configuration differs from
// the fleet's (a shorter retention, fewer replicas) cannot change them; a
// missing bucket is an error. Redis stores create nothing on open.
func OpenExistingStores(ctx context.Context, cfg config.Worker, js jetstream.JetStream, rdb redis.UniversalClient) (*Stores, error) {
	if rdb != nil {
		return openRedisStores(cfg, rdb)
	}
	st, err := openNATSStores(ctx, cfg, js, true)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w (the workers create the NATS KV stores; a fleet on Redis needs redis.url here too)", err)
	}
	return st, err
}

func openRedisStores(cfg config.Worker, rdb redis.UniversalClient) (*Stores, error) {
	rc := redissession.Config{Prefix: cfg.Redis.Prefix, InvocationRetention: cfg.Idempotency.Retention}
	svc, err := redissession.New(rdb, rc)
	if err != nil {
		return nil, err
	}
	locker, err := redissession.NewLocker(rdb, rc)
	if err != nil {
		return nil, err
	}
	invs, err := redissession.NewInvocations(rdb, rc)
	if err != nil {
		return nil, err
	}
	var gate session.Gate = session.NewGate(locker, invs)
	if g, err := redissession.NewGate(rdb, rc); err == nil {
		gate = g
	} else if !errors.Is(err, redissession.ErrClusterGate) {
		return nil, err
	}
	// rdb is often the auto-pipeliner over the client ConnectRedis made,
	// which retries only with a positive max_retries in the URL: the
	// booking rides the pipeline unless the client may resend it.
	orders := support.NewRedisOrders(rdb, cfg.Redis.DemoPrefix).ClientResends(redisMayResend(rdb))
	return &Stores{
		Mode: "redis", Sessions: svc, Locker: locker, Invocations: invs, Gate: gate,
		Idempotency:          redisstore.New(rdb, redisstore.Config{Prefix: cfg.Redis.Prefix, Retention: cfg.Idempotency.Retention}),
		IdempotencyRetention: cfg.Idempotency.Retention,
		Cooldown:             cooldown.NewRedis(rdb, cfg.Redis.Prefix, cfg.Cooldown),
		Orders:               withToolFaults(cfg, orders),
		Refunds:              orders.Refunds,
		Ping:                 func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	}, nil
}

func openNATSStores(ctx context.Context, cfg config.Worker, js jetstream.JetStream, existing bool) (*Stores, error) {
	if js == nil {
		return nil, errors.New("app: no Redis and no JetStream for the stores")
	}
	nc := natssession.Config{InvocationRetention: cfg.Idempotency.Retention, Replicas: cfg.Streams.Replicas, OpenExisting: existing}
	svc, err := natssession.NewService(ctx, js, nc)
	if err != nil {
		return nil, fmt.Errorf("app: session bucket: %w", err)
	}
	locker, err := natssession.NewLocker(ctx, js, nc)
	if err != nil {
		return nil, fmt.Errorf("app: lock bucket: %w", err)
	}
	// Every Acquire would refuse a longer lease: each request Nak'ed as an
	// infrastructure failure for ever, never dead-lettered (found in
	// review, twenty-second session).
	if l := cfg.Worker.SessionLease; l > locker.MaxLease() {
		return nil, fmt.Errorf("%w: worker.session_lease %v exceeds the session lock bucket's max age %v: want a shorter lease (default 30s)",
			ErrBadConfig, l, locker.MaxLease())
	}
	invs, err := natssession.NewInvocations(ctx, js, nc)
	if err != nil {
		return nil, fmt.Errorf("app: invocation bucket: %w", err)
	}
	idem, err := natskv.New(ctx, js, natskv.Config{Retention: cfg.Idempotency.Retention, Replicas: cfg.Streams.Replicas, OpenExisting: existing})
	if err != nil {
		return nil, fmt.Errorf("app: idempotency bucket: %w", err)
	}
	ordersMode := kvbucket.Configure
	if existing {
		ordersMode = kvbucket.Existing
	}
	orders, err := support.OpenNATSOrders(ctx, js, "", ordersMode)
	if err != nil {
		return nil, err
	}
	return &Stores{
		Mode: "nats-kv", Sessions: svc, Locker: locker, Invocations: invs, Gate: session.NewGate(locker, invs), Idempotency: idem,
		IdempotencyRetention: idem.Retention(),
		Cooldown:             cooldown.NewMemory(cfg.Cooldown),
		Orders:               withToolFaults(cfg, orders),
		Refunds:              orders.Refunds,
		Ping: func(ctx context.Context) error {
			_, err := js.AccountInfo(ctx)
			return err
		},
	}, nil
}

// withToolFaults wraps the demo orders service with the simulated tool
// faults of model.sim.tool_faults (chaos runs), if any, and only with the
// SIMULATED provider: a run with a real model gets no simulated faults
// (found in review, sixteenth session: they were injected, unlabelled).
func withToolFaults(cfg config.Worker, orders support.Orders) support.Orders {
	if cfg.Model.Sim.ToolFaults <= 0 || cfg.Model.Spec != "sim" {
		return orders
	}
	seed := cfg.Model.Sim.Seed
	if seed == 0 {
		seed = sim.NewSeed() // no model.sim.seed: this worker's own draws
	}
	return support.NewFaultyOrders(orders, cfg.Model.Sim.ToolFaults, seed)
}

// StoresIdentity names the stores a worker of cfg keeps its idempotency
// records, sessions and invocation records in, as far as its configuration
// says: "redis db=<n> prefix=<p>" with redis.url, "nats-kv" without.
// Workers that share the worker consumer must name the same stores
// (streams.Config.WorkerStores): a request redelivered from one store's
// worker to another's would run its effects again. The configuration
// cannot tell two Redis servers apart (two hostnames may name one server,
// one hostname another server elsewhere): Connect records
// RedisStoresIdentity, which adds the id the stores keep in Redis itself
// (RedisStoresID). StoresIdentity is what workers of earlier versions
// recorded, which Connect accepts for the same db and prefix and rewrites.
// NATS KV stores need no id: they live on the JetStream of the consumer
// itself. A Redis URL that does not parse names no stores (Validate
// refuses it first).
//
// A Sentinel URL (config.ParseRedisURL) names the same stores as a URL of
// its primary with the same db: the stores are the data, which the id
// follows through a failover, not the addresses the client finds it by.
// So a fleet may move from the primary's address to its Sentinels, or
// change its list of Sentinels, one worker at a time; another Redis server
// behind them has another id and is refused as before.
func StoresIdentity(cfg config.Worker) string {
	if cfg.Redis.URL == "" {
		return "nats-kv"
	}
	opts, failover, err := config.ParseRedisURL(cfg.Redis.URL)
	if err != nil {
		return ""
	}
	var db int
	if failover != nil {
		db = failover.DB
	} else {
		db = opts.DB
	}
	return fmt.Sprintf("redis db=%d prefix=%s", db, cfg.Redis.Prefix)
}

// RedisStoresIdentity is StoresIdentity of a worker on Redis with the id
// its Redis keeps under the prefix (RedisStoresID): "redis db=<n>
// prefix=<p> id=<id>", what the worker consumer records. The description
// carries the id before the stores ("; stores id: <id>; stores: redis
// db=<n> prefix=<p>", streams.WorkerConsumerDescription), so that workers
// of earlier versions, which compare the text after "; stores: " with
// StoresIdentity, still join the consumer of their own stores.
func RedisStoresIdentity(cfg config.Worker, id string) string {
	return StoresIdentity(cfg) + " id=" + id
}

// StoresIDKey is the key, after redis.prefix, under which the Redis stores
// keep their id (RedisStoresID).
const StoresIDKey = "stores:id"

// RedisStoresID returns the random id the Redis stores under prefix keep in
// Redis itself (key <prefix>stores:id, in the URL's db), setting one first
// (SET NX, no expiry) when there is none. Every worker on the same server,
// db and prefix reads the same id, whatever name or address it reaches the
// server by; a worker on another server gets another. A Redis that lost its
// data (FLUSHALL, a restart without persistence) gets a new id, and the
// worker consumer refuses its workers like another server's: its
// idempotency records are gone too.
func RedisStoresID(ctx context.Context, rdb redis.Cmdable, prefix string) (string, error) {
	key := prefix + StoresIDKey
	// Read first, write only when there is none: a worker restarting while
	// Redis refuses writes (full under noeviction, a replica) must still
	// start (found in review, nineteenth session: SET NX on every start
	// failed with OOM on a full Redis).
	id, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("redis: stores id: %w", err)
		}
		if err := rdb.SetNX(ctx, key, hex.EncodeToString(b[:]), 0).Err(); err != nil {
			return "", fmt.Errorf("redis: set stores id %s: %w", key, err)
		}
		id, err = rdb.Get(ctx, key).Result()
	}
	if err != nil {
		return "", fmt.Errorf("redis: read stores id %s: %w", key, err)
	}
	if id == "" || strings.ContainsAny(id, " ;") {
		return "", fmt.Errorf("redis: stores id %s holds %q, not an id (delete the key if it was set by hand)", key, id)
	}
	return id, nil
}

// redisMayResend reports whether rdb may send a command again after its
// reply was lost: whatever support.MayResend says of a plain client; for an
// auto-pipeliner, what StoreClient recorded of the client under it (true
// for one StoreClient did not make: its client cannot be seen).
func redisMayResend(rdb redis.UniversalClient) bool {
	ap, ok := rdb.(*redis.AutoPipeliner)
	if !ok {
		return support.MayResend(rdb)
	}
	if v, ok := pipelinerResends.Load(ap); ok {
		return v.(bool)
	}
	return true
}
