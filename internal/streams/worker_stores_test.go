package streams_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// Workers whose stores differ (Redis and NATS KV, or two Redis key
// prefixes) must not share the worker consumer: a request redelivered from
// one to the other runs its effects again, because the second idempotency
// store has never seen the first's keys. The consumer records the stores of
// the workers that made it, and Ensure refuses a worker with other stores
// (a configuration error), leaving the consumer as it was.
func TestEnsureRefusesAWorkerWithOtherStores(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	redisA := streams.Config{WorkerStores: "redis db=0 prefix=af:"}
	if _, err := streams.Ensure(ctx, js, redisA); err != nil {
		t.Fatal(err)
	}
	// Another worker of the same fleet: same stores, accepted.
	if _, err := streams.Ensure(ctx, js, redisA); err != nil {
		t.Fatalf("a second worker with the same stores: %v", err)
	}
	for _, other := range []string{"redis db=0 prefix=blue:", "nats-kv"} {
		_, err := streams.Ensure(ctx, js, streams.Config{WorkerStores: other})
		if !errors.Is(err, streams.ErrStoresDiffer) {
			t.Fatalf("a worker with stores %q on a consumer of %q: err = %v, want ErrStoresDiffer", other, redisA.WorkerStores, err)
		}
	}
	// A tool that names no stores (the load generator, a test) keeps the
	// recorded ones.
	if _, err := streams.Ensure(ctx, js, streams.Config{}); err != nil {
		t.Fatal(err)
	}
	sc := redisA.WithDefaults()
	cons, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if got := streams.WorkerStoresOf(cons.CachedInfo().Config.Description); got != redisA.WorkerStores {
		t.Fatalf("the consumer records stores %q, want %q (description %q)", got, redisA.WorkerStores, cons.CachedInfo().Config.Description)
	}
	// The rebind after a lost consumer checks the same way.
	if _, err := streams.EnsureWorkerConsumer(ctx, js, streams.Config{WorkerStores: "nats-kv"}); !errors.Is(err, streams.ErrStoresDiffer) {
		t.Fatalf("EnsureWorkerConsumer with other stores: err = %v, want ErrStoresDiffer", err)
	}
}

// A consumer made before the stores were recorded (an upgrade) is adopted
// by the first worker that names its stores.
func TestEnsureAdoptsAConsumerThatRecordsNoStores(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := streams.Ensure(ctx, js, streams.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(ctx, js, streams.Config{WorkerStores: "nats-kv"}); err != nil {
		t.Fatalf("the first worker naming its stores: %v", err)
	}
	if _, err := streams.Ensure(ctx, js, streams.Config{WorkerStores: "redis db=0 prefix=af:"}); !errors.Is(err, streams.ErrStoresDiffer) {
		t.Fatalf("after the adoption, other stores: err = %v, want ErrStoresDiffer", err)
	}
}
