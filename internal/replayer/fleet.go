package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Fleet is the replayer's view of a deployment: the NATS connection, the
// stream topology, the DLQ reader, the parked stream and (when opened with
// stores) the fleet's stores.
type Fleet struct {
	// Cfg is the configuration the fleet was opened with.
	Cfg config.Replayer
	// NC and JS are the NATS connection and its JetStream context.
	NC *nats.Conn
	JS jetstream.JetStream // JS is the JetStream context on NC.
	// Streams is the stream topology (defaults applied).
	Streams streams.Config
	// Reader reads the DLQ stream.
	Reader *dlq.Reader
	// Parked is the parked stream.
	Parked *Parked
	// Stores are the fleet's stores (nil unless opened with stores, or
	// when show found the fleet's Redis out of reach: tryStoresCheck).
	Stores *app.Stores
	// Client reads results.
	Client *client.Client

	dlqMaxAge time.Duration // the live DLQ stream's max age, read by OpenFleet
	// reqDups is the live requests stream's duplicate window, read by
	// OpenFleet (0: unknown, every replay checks its entry first).
	reqDups  time.Duration
	walkWait time.Duration // the walk's wait for its next entry (0: defaultWalkWait); tests shorten it
	// storesRedis is the Redis client the stores check reads the stores'
	// id with (nil without redis.url, or when a dry run found Redis down).
	storesRedis *redis.Client
	close       []func()
}

// Close releases the connections.
func (f *Fleet) Close() {
	for i := len(f.close) - 1; i >= 0; i-- {
		f.close[i]()
	}
}

// StreamsConfig maps the replayer's configuration to the stream topology.
func StreamsConfig(c config.Replayer) streams.Config {
	sc := app.StreamsConfig(c.Worker())
	sc.ReplayerConsumer = c.Replay.Consumer
	return sc
}

// OpenFleet connects to NATS (and Redis when configured and withStores is
// set) and checks that the DLQ stream exists. OpenFleet itself creates
// nothing (EnsureForWrites does, for the commands that write): read-only
// commands and --dry-run leave the server as they found it. withStores opens
// the fleet's stores (sessions, idempotency records, cooldown) as they are
// (app.OpenExistingStores: on NATS KV the workers' buckets, whose max ages
// the replayer's own configuration must not change). CheckRetention is
// the commands' to call. OpenFleet does not compare the stores with the
// ones the fleet's workers record: show, replay and drain open the fleet
// through cmdCtx.openFleet, which does (checkFleetStores).
func OpenFleet(ctx context.Context, cfg config.Replayer, withStores bool, log zerolog.Logger) (*Fleet, error) {
	return openFleet(ctx, cfg, withStores, skipStoresCheck, "", io.Discard, log)
}

// openFleet is OpenFleet; unless check is skipStoresCheck it also compares,
// before opening any store, the stores of cfg with those the fleet's
// workers record (checkFleetStores, its warnings written to warn), also
// without withStores (replay --dry-run: the real run would open them).
// With tryStoresCheck a check that cannot be decided is a warning: also a
// Redis that does not answer, and then the fleet is returned without its
// stores (f.Stores nil, also with withStores: show reads the DLQ and parked
// entries and leaves out the look-ups that need a store; the dry run needs
// no store). requireStoresCheck fails on a Redis that does not answer.
// A class other than "" is checked as Fleet.checkClass does, before Redis.
func openFleet(ctx context.Context, cfg config.Replayer, withStores bool, check storesCheck, class string, warn io.Writer, log zerolog.Logger) (_ *Fleet, err error) {
	f := &Fleet{Cfg: cfg, Streams: StreamsConfig(cfg)}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	ncfg := cfg.NATS
	nc, err := app.ConnectNATS(ncfg, "dlq-replayer", log)
	if err != nil {
		return nil, err
	}
	f.NC = nc
	f.close = append(f.close, nc.Close)
	if f.JS, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	dlqStream, err := f.JS.Stream(cctx, f.Streams.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("DLQ stream %s: %w (is this the fleet's NATS server? the workers create it)", f.Streams.DLQStream, err)
	}
	f.dlqMaxAge = dlqStream.CachedInfo().Config.MaxAge
	if reqStream, err := f.JS.Stream(cctx, f.Streams.RequestsStream); err == nil {
		f.reqDups = reqStream.CachedInfo().Config.Duplicates
	}
	f.Reader = dlq.NewReader(f.JS, dlq.Config{Stream: f.Streams.DLQStream, Prefix: f.Streams.DLQPrefix, Consumer: f.Streams.ReplayerConsumer})
	f.Parked = &Parked{js: f.JS, cfg: ParkedConfig{
		Stream: cfg.Replay.ParkedStream, Prefix: cfg.Replay.ParkedPrefix, MaxAge: cfg.Replay.ParkedMaxAge,
		Replicas: f.Streams.Replicas,
	}}
	if f.Client, err = client.New(f.JS, nc, client.Config{
		RequestsStream: f.Streams.RequestsStream, ResultsStream: f.Streams.ResultsStream,
		RequestPrefix: f.Streams.RequestPrefix, ResultPrefix: f.Streams.ResultPrefix,
	}); err != nil {
		return nil, err
	}
	// A --class the taxonomy lacks is checked against the streams before
	// Redis is reached: a typo stays a usage error (exit 3, with what was
	// meant) during a Redis outage (found in review of this session's
	// fix, twenty-second session).
	if err := f.checkClass(ctx, class); err != nil {
		return nil, err
	}
	if !withStores && check == skipStoresCheck {
		return f, nil
	}
	if cfg.Redis.URL != "" {
		raw, err := app.ConnectRedis(ctx, cfg.Redis)
		switch {
		case err == nil:
			f.storesRedis = raw
			f.close = append(f.close, func() { _ = raw.Close() })
		case check != tryStoresCheck || errors.Is(err, app.ErrBadConfig):
			return nil, err
		default:
			// replay --dry-run during a Redis outage (found in review,
			// nineteenth session): the plan needs no store, and the
			// runbook's step 4 must work while Redis is down. show too
			// (found in review, twenty-second session): the DLQ and parked
			// entries need no store; it goes on without f.Stores and says
			// which look-ups it left out.
			warnStoresNotChecked(warn, fmt.Errorf("%w: %w", ErrStoresNotChecked, err))
			return f, nil
		}
	}
	if check != skipStoresCheck {
		warning, err := checkFleetStores(ctx, f)
		if warning != "" {
			fmt.Fprintf(warn, "dlq-replayer: warning: %s\n", warning)
		}
		switch {
		case err == nil:
		case check == tryStoresCheck && errors.Is(err, ErrStoresNotChecked):
			warnStoresNotChecked(warn, err)
		case errors.Is(err, ErrStoresNotChecked):
			return nil, fmt.Errorf("%w; replay and drain refuse to run without the check (show and replay --dry-run warn and go on): try again once it can be made", err)
		default:
			return nil, err
		}
	}
	if !withStores {
		return f, nil
	}
	var rdb redis.UniversalClient
	if f.storesRedis != nil {
		if rdb, err = app.StoreClient(f.storesRedis, cfg.Redis); err != nil {
			return nil, err
		}
	}
	if f.Stores, err = app.OpenExistingStores(ctx, cfg.Worker(), f.JS, rdb); err != nil {
		return nil, fmt.Errorf("stores: %w", err)
	}
	return f, nil
}

// EnsureForWrites creates what a replay, park or purge writes to: the
// parked stream and the durable dlq-replayer consumer. Both are idempotent.
// The fleet's streams themselves are the workers' to create.
func (f *Fleet) EnsureForWrites(ctx context.Context) error {
	if _, err := f.JS.CreateOrUpdateConsumer(ctx, f.Streams.DLQStream, f.Streams.ReplayerConsumerConfig()); err != nil {
		return fmt.Errorf("ensure consumer %s: %w", f.Streams.ReplayerConsumer, err)
	}
	return f.Parked.Ensure(ctx)
}

// isNotFound reports a missing stream message.
func isNotFound(err error) bool { return errors.Is(err, jetstream.ErrMsgNotFound) }
