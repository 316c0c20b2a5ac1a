package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/app"
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
	f := newRedisFleet(t)

	if err := f.start(t, "w-new", redistest.URL()); err != nil {
		t.Fatal(err)
	}
	full := app.RedisStoresIdentity(f.cfg, f.storesID(ctx, t))
	if got := f.recordedStores(ctx, t); got != full {
		t.Fatalf("the consumer records %q, want %q", got, full)
	}
	if err := earlierWorkerEnsure(ctx, f.js, f.sc, app.StoresIdentity(f.cfg)); err != nil {
		t.Fatalf("an earlier-version worker on the fleet's own Redis, restarting after the upgrade, was refused: %v", err)
	}
	if err := f.start(t, "w-new-again", redistest.URL()); err != nil {
		t.Fatalf("a worker of this version after an earlier-version worker's start: %v", err)
	}
	if got := f.recordedStores(ctx, t); got != full {
		t.Errorf("after the earlier-version worker and a worker of this version the consumer records %q, want %q (adopted again)", got, full)
	}
	if err := f.start(t, "w-other-server", startSecondRedis(t)); !errors.Is(err, app.ErrBadConfig) {
		t.Errorf("after the adoption a worker on another Redis server: err = %v, want ErrBadConfig", err)
	}
}
