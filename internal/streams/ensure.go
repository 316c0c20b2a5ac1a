package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Ensure creates the three streams and the two durable pull consumers of cfg
// (after WithDefaults), or updates them to cfg when they exist, except that
// it never lowers a stream's replica count and never shortens the results
// or the DLQ stream's max age (Apply): a process whose configuration is
// older or smaller than the fleet's would otherwise scale the fleet's
// streams down to fewer copies, or drop the results or dead letters
// between the two ages (lowering either is done by hand; DLQMaxAge reports
// what the DLQ keeps). It returns
// what it applied, stream by stream, so the caller can say what it kept (on
// an error, what it applied before the failing step). It is idempotent:
// every process of the fleet may call it at start-up. A field the server
// cannot change on an existing stream (retention, storage) makes it fail
// with the server's error.
//
// The DLQ stream allows direct gets (DLQStreamConfig). A process of an
// earlier version, whose configuration does not, turns them off when it
// starts, and the next process of this version turns them on again: the
// server takes either change on a live stream, so neither refuses to
// start, and dlq.Reader reads the stream both ways. Until every process
// runs this version, an entry near the max payload may again be unreadable
// on a server whose max_pending is its max_payload.
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config) ([]Applied, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var applied []Applied
	for _, s := range []struct {
		sc   jetstream.StreamConfig
		keep Keep
	}{
		{cfg.RequestsStreamConfig(), Keep{}},
		{cfg.ResultsStreamConfig(), Keep{MaxAge: true}},
		{cfg.DLQStreamConfig(), Keep{MaxAge: true}},
	} {
		a, err := Apply(ctx, js, s.sc, s.keep)
		if err != nil {
			return applied, err
		}
		applied = append(applied, a)
	}
	if _, err := EnsureWorkerConsumer(ctx, js, cfg); err != nil {
		return applied, err
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, cfg.DLQStream, cfg.ReplayerConsumerConfig()); err != nil {
		return applied, fmt.Errorf("streams: ensure consumer %s on %s: %w", cfg.ReplayerConsumer, cfg.DLQStream, err)
	}
	return applied, nil
}

// EnsureWorkerConsumer creates the durable worker consumer of cfg (after
// WithDefaults: WorkerConsumerConfig on the requests stream), or updates it
// to cfg when it exists, and returns it. Ensure creates it so at start-up;
// a worker calls this when its consumer has disappeared (deleted by hand,
// the stream re-created without it) to consume again with the same
// configuration. The requests stream must exist.
//
// With cfg.WorkerStores set, the consumer's description records the
// stores (WorkerConsumerDescription, read back by WorkerStoresOf), and a
// consumer that records other stores is not touched: the error wraps
// ErrStoresDiffer. Without it, the recorded stores are kept (rewritten in
// the current layout).
func EnsureWorkerConsumer(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Consumer, error) {
	cfg = cfg.WithDefaults()
	cc := cfg.WorkerConsumerConfig()
	recorded := ""
	switch cur, err := js.Consumer(ctx, cfg.RequestsStream, cc.Durable); {
	case err == nil:
		recorded = WorkerStoresOf(cur.CachedInfo().Config.Description)
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("streams: consumer %s on %s: %w", cc.Durable, cfg.RequestsStream, err)
	}
	stores := cfg.WorkerStores
	switch {
	case stores != "" && recorded != "" && stores != recorded:
		return nil, fmt.Errorf("streams: consumer %s on %s: %w: its workers use stores %q, this one %q; a request redelivered from one to the other would run its effects again. Use the same stores, or drain the fleet and delete the consumer before switching (README, \"Switching stores\")",
			cc.Durable, cfg.RequestsStream, ErrStoresDiffer, recorded, stores)
	case stores == "":
		stores = recorded
	}
	cc.Description = WorkerConsumerDescription(cc.Description, stores)
	c, err := js.CreateOrUpdateConsumer(ctx, cfg.RequestsStream, cc)
	if err != nil {
		return nil, fmt.Errorf("streams: ensure consumer %s on %s: %w", cc.Durable, cfg.RequestsStream, err)
	}
	return c, nil
}

// ErrStoresDiffer is returned (wrapped) by EnsureWorkerConsumer (and
// Ensure) when the worker consumer is used by workers with other stores
// than cfg.WorkerStores. Restarting does not help: it is a configuration
// error.
var ErrStoresDiffer = errors.New("streams: the worker consumer is used by workers with other stores")

// workerStoresMark separates the worker consumer's description from the
// stores it records, without their id: the text after it is what workers
// of earlier versions compare with their own stores, by equality.
const workerStoresMark = "; stores: "

// workerStoresIDMark records the stores' id, before workerStoresMark (see
// WorkerConsumerDescription).
const workerStoresIDMark = "; stores id: "

// storesIDSuffix ends a stores identity that carries an id
// ("redis db=0 prefix=af: id=<id>", app.RedisStoresIdentity).
const storesIDSuffix = " id="

// WorkerConsumerDescription returns the worker consumer's description:
// base (WorkerConsumerConfig's) followed by the stores identity stores (base
// alone when stores is ""). An identity that ends with an id (" id=<id>",
// the id without spaces or semicolons: app.RedisStoresIdentity) is written
// with the id first, under its own mark, and the rest last:
//
//	agent workers; stores id: <id>; stores: redis db=0 prefix=af:
//
// so that the text after "; stores: " is what workers of earlier versions
// recorded and compare by equality ("redis db=0 prefix=af:"): one of them
// that restarts during or after an upgrade (a crash mid-rollout, a
// rollback) still joins the consumer of its own stores, where the layout
// "; stores: redis db=0 prefix=af: id=<id>" refused it (found in review,
// nineteenth session). Such a worker rewrites the description as it knows
// it, without the id; the next worker of this version adopts the record
// again (app's adoptEarlierStoresRecord). So while earlier-version workers
// run, a worker on another Redis server with the same db and prefix is
// only caught once a worker of this version starts after it (and an
// earlier-version one never is: it knows of no id). Other identities
// ("nats-kv") follow the mark as they are. WorkerStoresOf reads either
// layout back.
func WorkerConsumerDescription(base, stores string) string {
	if stores == "" {
		return base
	}
	if rest, id, ok := splitStoresID(stores); ok {
		return base + workerStoresIDMark + id + workerStoresMark + rest
	}
	return base + workerStoresMark + stores
}

// splitStoresID splits a stores identity into what precedes its trailing
// id and the id; ok is false when it has none (or an id that
// WorkerConsumerDescription could not put before the stores mark).
func splitStoresID(stores string) (rest, id string, ok bool) {
	i := strings.LastIndex(stores, storesIDSuffix)
	if i <= 0 {
		return stores, "", false
	}
	rest, id = stores[:i], stores[i+len(storesIDSuffix):]
	if id == "" || strings.ContainsAny(id, " ;") {
		return stores, "", false
	}
	return rest, id, true
}

// WorkerStoresOf returns the stores identity a worker consumer's
// description records, the id included ("redis db=0 prefix=af: id=<id>"
// from "agent workers; stores id: <id>; stores: redis db=0 prefix=af:",
// WorkerConsumerDescription's layout, and from the first layout that
// recorded an id, "agent workers; stores: redis db=0 prefix=af: id=<id>"),
// or "" when it records none: a consumer made before the check existed, or
// by a tool. A record of an earlier version, or rewritten by an
// earlier-version worker, carries no id ("redis db=0 prefix=af:").
func WorkerStoresOf(description string) string {
	before, stores, ok := strings.Cut(description, workerStoresMark)
	if !ok {
		return ""
	}
	if _, id, ok := strings.Cut(before, workerStoresIDMark); ok && id != "" && stores != "" {
		return stores + storesIDSuffix + id
	}
	return stores
}

// DLQMaxAge returns the DLQ stream's max age as the server has it (0: it
// keeps entries until they are deleted), which Ensure may have left longer
// than cfg.DLQMaxAge.
func DLQMaxAge(ctx context.Context, js jetstream.JetStream, cfg Config) (time.Duration, error) {
	cfg = cfg.WithDefaults()
	s, err := js.Stream(ctx, cfg.DLQStream)
	if err != nil {
		return 0, fmt.Errorf("streams: DLQ stream %s: %w", cfg.DLQStream, err)
	}
	return s.CachedInfo().Config.MaxAge, nil
}

// RequestsStreamConfig returns AGENT_REQUESTS: work-queue retention (a
// request is removed once a worker acks or terminates it), the requests'
// duplicate window, no age limit (work is never dropped).
func (c Config) RequestsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.RequestsStream,
		Description: "agent invocation requests (work queue)",
		Subjects:    []string{c.RequestPrefix + ".>"},
		Retention:   jetstream.WorkQueuePolicy,
		Discard:     jetstream.DiscardOld,
		Duplicates:  c.RequestDuplicates,
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}
}

// ResultsStreamConfig returns AGENT_RESULTS: limits retention, MaxAge
// ResultsMaxAge and one message per subject, so the last message of
// <ResultPrefix>.<invocation_id> is the invocation's result. Direct get is
// allowed so producers read results cheaply. The duplicate window is the
// server's default (2m, or MaxAge when shorter).
func (c Config) ResultsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              c.ResultsStream,
		Description:       "agent invocation results (last per invocation)",
		Subjects:          []string{c.ResultPrefix + ".*"},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxAge:            c.ResultsMaxAge,
		MaxMsgsPerSubject: 1,
		AllowDirect:       true,
		Storage:           c.Storage,
		Replicas:          c.Replicas,
	}
}

// DLQStreamConfig returns AGENT_DLQ: limits retention, MaxAge DLQMaxAge,
// duplicate window DLQDuplicates (entries carry Nats-Msg-Id
// dlq-<invocation_id>-<n>). Subjects are <DLQPrefix>.<class>.<agent>.
//
// Direct get is allowed: the replayer reads entries one by one (dlq.Reader's
// List and Get), and a direct get answers with the entry as stored, within
// the max payload, where a stream message get answers with it base64 in
// JSON, a third larger, which a server whose max_pending is its
// max_payload closes the reader's connection for (slow consumer). A
// direct get may be answered by any replica of an R3 stream, which can lag
// the leader by a moment (see dlq.Reader).
func (c Config) DLQStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.DLQStream,
		Description: "dead-lettered agent invocations",
		Subjects:    []string{c.DLQPrefix + ".*.*"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      c.DLQMaxAge,
		Duplicates:  c.DLQDuplicates,
		AllowDirect: true,
		Storage:     c.Storage,
		Replicas:    c.Replicas,
	}
}

// WorkerConsumerConfig returns the durable pull consumer "workers": explicit
// ack, AckWait WorkerAckWait, MaxAckPending WorkerMaxAckPending and unlimited
// MaxDeliver (-1): the worker dead-letters past its own limit (runs of the
// invocation, counted in its record), so the server never drops a request.
func (c Config) WorkerConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       c.WorkerConsumer,
		Description:   "agent workers",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.WorkerAckWait,
		MaxDeliver:    -1,
		MaxAckPending: c.WorkerMaxAckPending,
		FilterSubject: c.RequestPrefix + ".>",
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
	}
}

// ReplayerConsumerConfig returns the durable pull consumer "dlq-replayer" on
// AGENT_DLQ: explicit ack, unlimited MaxDeliver.
func (c Config) ReplayerConsumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       c.ReplayerConsumer,
		Description:   "dead-letter replayer",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.ReplayerAckWait,
		MaxDeliver:    -1,
		MaxAckPending: c.ReplayerMaxAckPending,
		FilterSubject: c.DLQPrefix + ".>",
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
	}
}
