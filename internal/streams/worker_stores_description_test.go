package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// earlierWorkerStoresOf is a copy of WorkerStoresOf as workers of earlier
// versions (before the stores' id was recorded) have it: everything after
// the first "; stores: ". Those binaries are deployed; this copy must not
// follow changes to the package.
func earlierWorkerStoresOf(description string) string {
	if _, after, ok := strings.Cut(description, "; stores: "); ok {
		return after
	}
	return ""
}

// earlierEnsureWorkerConsumer is a copy of EnsureWorkerConsumer as workers
// of earlier versions have it (their cfg.WorkerStores is "redis db=<n>
// prefix=<p>", without id): the recorded stores are compared with the
// worker's by equality, and the description is written back as
// "agent workers; stores: <stores>". Like earlierWorkerStoresOf, it must
// not follow changes to the package.
func earlierEnsureWorkerConsumer(ctx context.Context, js jetstream.JetStream, cfg streams.Config) (jetstream.Consumer, error) {
	cfg = cfg.WithDefaults()
	cc := cfg.WorkerConsumerConfig()
	recorded := ""
	switch cur, err := js.Consumer(ctx, cfg.RequestsStream, cc.Durable); {
	case err == nil:
		recorded = earlierWorkerStoresOf(cur.CachedInfo().Config.Description)
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("streams: consumer %s on %s: %w", cc.Durable, cfg.RequestsStream, err)
	}
	stores := cfg.WorkerStores
	switch {
	case stores != "" && recorded != "" && stores != recorded:
		return nil, fmt.Errorf("streams: consumer %s on %s: %w: its workers use stores %q, this one %q",
			cc.Durable, cfg.RequestsStream, streams.ErrStoresDiffer, recorded, stores)
	case stores == "":
		stores = recorded
	}
	if stores != "" {
		cc.Description += "; stores: " + stores
	}
	c, err := js.CreateOrUpdateConsumer(ctx, cfg.RequestsStream, cc)
	if err != nil {
		return nil, fmt.Errorf("streams: ensure consumer %s on %s: %w", cc.Durable, cfg.RequestsStream, err)
	}
	return c, nil
}

// Regression (found in review, nineteenth session): the worker consumer
// recorded a Redis store's id after the stores ("agent workers; stores:
// redis db=0 prefix=af: id=<id>"), and workers of earlier versions compare
// everything after "; stores: " with "redis db=0 prefix=af:" by equality:
// after an upgrade, an earlier-version worker that restarted (a crash
// mid-rollout, a rollback during an incident) was refused with exit 2 until
// someone edited or deleted the consumer. The id now comes first, under its
// own mark: the earlier logic (copied above as it is deployed) reads its
// own stores and joins, and still refuses another prefix. It rewrites the
// description without the id, which this version reads as the earlier
// record (app adopts it again); a consumer already written in the first id
// layout is read with its id and rewritten in the new one.
func TestEarlierVersionJoinsTheConsumerThisVersionRecorded(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const (
		legacy = "redis db=0 prefix=af:"
		full   = legacy + " id=0123456789abcdef"
	)
	current := streams.Config{WorkerStores: full}
	if _, err := streams.Ensure(ctx, js, current); err != nil {
		t.Fatal(err)
	}
	sc := current.WithDefaults()
	description := func() string {
		t.Helper()
		cons, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
		if err != nil {
			t.Fatal(err)
		}
		return cons.CachedInfo().Config.Description
	}
	written := description()
	if got := streams.WorkerStoresOf(written); got != full {
		t.Fatalf("this version reads %q back from %q, want %q", got, written, full)
	}
	if got := earlierWorkerStoresOf(written); got != legacy {
		t.Errorf("an earlier-version worker reads stores %q from %q, want its own %q", got, written, legacy)
	}
	if _, err := earlierEnsureWorkerConsumer(ctx, js, streams.Config{WorkerStores: "redis db=0 prefix=blue:"}); !errors.Is(err, streams.ErrStoresDiffer) {
		t.Errorf("an earlier-version worker on another prefix against %q: err = %v, want ErrStoresDiffer", written, err)
	}
	if _, err := earlierEnsureWorkerConsumer(ctx, js, streams.Config{WorkerStores: legacy}); err != nil {
		t.Fatalf("an earlier-version worker on the same db and prefix restarting against %q was refused: %v", written, err)
	}
	if got := streams.WorkerStoresOf(description()); got != legacy {
		t.Errorf("after an earlier-version worker's start the consumer records %q, want the earlier record %q (adopted again by app)", got, legacy)
	}

	// A consumer already written in the first id layout.
	cc := sc.WorkerConsumerConfig()
	cc.Description = "agent workers; stores: " + full
	if _, err := js.UpdateConsumer(ctx, sc.RequestsStream, cc); err != nil {
		t.Fatal(err)
	}
	if got := streams.WorkerStoresOf(cc.Description); got != full {
		t.Errorf("WorkerStoresOf(%q) = %q, want %q", cc.Description, got, full)
	}
	if _, err := streams.EnsureWorkerConsumer(ctx, js, current); err != nil {
		t.Fatalf("a worker of this version against the first id layout of its own stores: %v", err)
	}
	if got, want := description(), streams.WorkerConsumerDescription("agent workers", full); got != want {
		t.Errorf("the first id layout was rewritten as %q, want %q", got, want)
	}
	if _, err := earlierEnsureWorkerConsumer(ctx, js, streams.Config{WorkerStores: legacy}); err != nil {
		t.Errorf("an earlier-version worker after the rewrite of the first id layout: %v", err)
	}
}

// Regression (found in review, nineteenth session): the description
// WorkerConsumerDescription composes is read back by WorkerStoresOf as
// the identity it was given, with or without an id, and puts a Redis
// store's id before the "; stores: " mark (what earlier versions compare
// follows it unchanged). WorkerStoresOf also reads the first id layout and
// the descriptions that record no stores.
func TestWorkerConsumerDescriptionRoundTrip(t *testing.T) {
	const base = "agent workers"
	for _, c := range []struct{ stores, description string }{
		{"redis db=0 prefix=af: id=0123456789abcdef", "agent workers; stores id: 0123456789abcdef; stores: redis db=0 prefix=af:"},
		{"redis db=3 prefix=team-a: id=x", "agent workers; stores id: x; stores: redis db=3 prefix=team-a:"},
		{"redis db=0 prefix=af:", "agent workers; stores: redis db=0 prefix=af:"},
		{"nats-kv", "agent workers; stores: nats-kv"},
		// Not an id: it could not stand before the mark.
		{"redis db=0 prefix=af: id=a;b", "agent workers; stores: redis db=0 prefix=af: id=a;b"},
		{"", "agent workers"},
	} {
		got := streams.WorkerConsumerDescription(base, c.stores)
		if got != c.description {
			t.Errorf("WorkerConsumerDescription(%q, %q) = %q, want %q", base, c.stores, got, c.description)
		}
		if back := streams.WorkerStoresOf(got); back != c.stores {
			t.Errorf("WorkerStoresOf(%q) = %q, want %q back", got, back, c.stores)
		}
	}
	for description, want := range map[string]string{
		"agent workers; stores: redis db=0 prefix=af: id=0123": "redis db=0 prefix=af: id=0123",
		"agent workers": "",
		"":              "",
	} {
		if got := streams.WorkerStoresOf(description); got != want {
			t.Errorf("WorkerStoresOf(%q) = %q, want %q", description, got, want)
		}
	}
}
