package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/streams"
)

// env is the servers of one run and the names unique to it.
type env struct {
	run      string // random suffix of every name this run creates
	natsURL  string
	redisURL string // "" when embedded
	srv      *app.Embedded
	nats     natsProc // nats is the NATS server as the CPU meter measures it.
	dataDir  string
	nc       *nats.Conn // the load generator's own connection
	js       jetstream.JetStream
	rdb      *redis.Client // nil when embedded
	created  []string      // streams to delete
	prefixes []string      // Redis key prefixes to delete
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// openEnv starts the embedded server or connects to the configured ones.
func openEnv(ctx context.Context, cfg Config) (_ *env, err error) {
	e := &env{run: newRunID(), natsURL: cfg.NATSURL}
	defer func() {
		if err != nil {
			e.close(ctx)
		}
	}()
	if cfg.Embedded {
		dir, err := os.MkdirTemp("", "agentfleet-loadgen-")
		if err != nil {
			return nil, fmt.Errorf("loadgen: data dir: %w", err)
		}
		e.dataDir = dir
		srv, err := app.StartEmbedded(config.Embedded{Enabled: true, DataDir: dir, Port: -1}, app.NewLogger(io.Discard, "error"))
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		e.srv, e.natsURL = srv, srv.ClientURL()
		e.nats = natsProc{inProcess: true, note: "in this process (embedded)"}
	} else {
		e.nats = natsServer(e.natsURL)
		e.redisURL = cfg.RedisURL
		rdb, err := app.ConnectRedis(ctx, config.Redis{URL: cfg.RedisURL})
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		e.rdb = rdb
	}
	nc, err := nats.Connect(e.natsURL, nats.Name("loadgen-"+e.run))
	if err != nil {
		return nil, fmt.Errorf("loadgen: connect %s: %w", config.RedactNATSURL(e.natsURL), config.RedactConnectError(err, e.natsURL))
	}
	e.nc = nc
	if e.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	return e, nil
}

// topology returns stream names and subject prefixes unique to this run and
// phase, with the worker consumer sized like app.StreamsConfig does.
func (e *env) topology(phase string, concurrency int) streams.Config {
	tag := strings.ToUpper(phase) + "_" + e.run
	p := "lg" + e.run + "." + phase
	return streams.Config{
		RequestsStream: "LG_REQ_" + tag, ResultsStream: "LG_RES_" + tag, DLQStream: "LG_DLQ_" + tag,
		RequestPrefix: p + ".requests", ResultPrefix: p + ".results", DLQPrefix: p + ".dlq",
		WorkerMaxAckPending: max(64, concurrency*4),
	}.WithDefaults()
}

// ensure creates the topology and remembers it for the clean-up.
func (e *env) ensure(ctx context.Context, sc streams.Config) error {
	e.created = append(e.created, sc.RequestsStream, sc.ResultsStream, sc.DLQStream)
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := streams.Ensure(ectx, e.js, sc); err != nil {
		return fmt.Errorf("loadgen: ensure streams: %w", err)
	}
	return nil
}

// keyPrefix returns a Redis key prefix unique to this run and phase.
func (e *env) keyPrefix(phase string) string {
	p := "lg-" + e.run + "-" + phase + ":"
	e.prefixes = append(e.prefixes, p)
	return p
}

// close deletes what the run created and releases the connections.
func (e *env) close(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	if e.js != nil && e.srv == nil {
		for _, s := range e.created {
			if err := e.js.DeleteStream(cctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				errs = append(errs, fmt.Errorf("delete stream %s: %w", s, err))
			}
		}
	}
	if e.rdb != nil {
		for _, p := range e.prefixes {
			if err := deleteKeys(cctx, e.rdb, p); err != nil {
				errs = append(errs, err)
			}
		}
		_ = e.rdb.Close()
	}
	if e.nc != nil {
		e.nc.Close()
	}
	if e.srv != nil {
		e.srv.Close()
	}
	if e.dataDir != "" {
		_ = os.RemoveAll(e.dataDir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("loadgen: clean-up: %w", errors.Join(errs...))
	}
	return nil
}

// deleteKeys unlinks every key under prefix (SCAN, never KEYS).
func deleteKeys(ctx context.Context, rdb *redis.Client, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	batch := make([]string, 0, 500)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := rdb.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return fmt.Errorf("delete keys %s*: %w", prefix, err)
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan keys %s*: %w", prefix, err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("delete keys %s*: %w", prefix, err)
	}
	return nil
}
