package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// earlierWorkerEnsure is what a worker of an earlier version (before the
// stores' id was recorded) does to the worker consumer at start, copied as
// it is deployed (its streams.WorkerStoresOf and EnsureWorkerConsumer,
// with stores = app.StoresIdentity, "redis db=<n> prefix=<p>"): it takes
// everything after the first "; stores: " for the recorded stores,
// refuses the consumer when they are not its own by equality, and
// otherwise writes the description back as "agent workers; stores:
// <stores>". It must not follow changes to the code.
func earlierWorkerEnsure(ctx context.Context, js jetstream.JetStream, sc streams.Config, stores string) error {
	sc = sc.WithDefaults()
	cc := sc.WorkerConsumerConfig()
	recorded := ""
	switch cur, err := js.Consumer(ctx, sc.RequestsStream, cc.Durable); {
	case err == nil:
		if _, after, ok := strings.Cut(cur.CachedInfo().Config.Description, "; stores: "); ok {
			recorded = after
		}
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return err
	}
	if recorded != "" && stores != recorded {
		return fmt.Errorf("%w: its workers use stores %q, this one %q", streams.ErrStoresDiffer, recorded, stores)
	}
	cc.Description += "; stores: " + stores
	_, err := js.CreateOrUpdateConsumer(ctx, sc.RequestsStream, cc)
	return err
}

// Regression (found in review, nineteenth session): the worker consumer
// recorded a Redis store's id after the stores, where workers of earlier
// versions compare the text after "; stores: " with their own "redis
// db=<n> prefix=<p>" by equality: an earlier-version worker restarting in
// an upgraded fleet (a crash mid-rollout, a rollback during an incident)
// was refused with exit 2 until someone edited or deleted the consumer.
// Now the id comes first: the earlier-version worker joins (writing the
// record back without the id), and the next worker of this version adopts
// the record again with its Redis's id, so a worker on another Redis
// server is refused once more.
func TestEarlierVersionWorkerRestartsInAnUpgradedFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := natstest.RunServer(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	rdb, prefix := redistest.Client(t)
	cfg := config.DefaultWorker()
	cfg.Redis.URL, cfg.Redis.Prefix = redistest.URL(), prefix
	sc := app.StreamsConfig(cfg)
	recorded := func() string {
		t.Helper()
		cons, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
		if err != nil {
			t.Fatal(err)
		}
		return streams.WorkerStoresOf(cons.CachedInfo().Config.Description)
	}

	if err := startOnRedis(t, "w-new", s.ClientURL(), redistest.URL(), prefix); err != nil {
		t.Fatal(err)
	}
	id, err := rdb.Get(ctx, prefix+app.StoresIDKey).Result()
	if err != nil {
		t.Fatalf("no stores id in Redis at %s: %v", prefix+app.StoresIDKey, err)
	}
	full := app.RedisStoresIdentity(cfg, id)
	if got := recorded(); got != full {
		t.Fatalf("the consumer records %q, want %q", got, full)
	}
	if err := earlierWorkerEnsure(ctx, js, sc, app.StoresIdentity(cfg)); err != nil {
		t.Fatalf("an earlier-version worker on the fleet's own Redis, restarting after the upgrade, was refused: %v", err)
	}
	if err := startOnRedis(t, "w-new-again", s.ClientURL(), redistest.URL(), prefix); err != nil {
		t.Fatalf("a worker of this version after an earlier-version worker's start: %v", err)
	}
	if got := recorded(); got != full {
		t.Errorf("after the earlier-version worker and a worker of this version the consumer records %q, want %q (adopted again)", got, full)
	}
	if err := startOnRedis(t, "w-other-server", s.ClientURL(), startSecondRedis(t), prefix); !errors.Is(err, app.ErrBadConfig) {
		t.Errorf("after the adoption a worker on another Redis server: err = %v, want ErrBadConfig", err)
	}
}
