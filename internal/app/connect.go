package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/gofrs/flock"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/support"
)

// ConnectNATS connects to the configured server with credentials, nkey and
// TLS as configured. It reconnects forever: a NATS restart must not end a
// worker. A credential or certificate file that cannot be used
// (config.NATS.CheckFiles: unreadable, or holding no seed, JWT or PEM
// certificate) is an error matching ErrBadConfig, and so is any option
// nats.go refuses before it dials: connecting would fail the same way on
// every try.
func ConnectNATS(cfg config.NATS, name string, log zerolog.Logger) (*nats.Conn, error) {
	// Found in review, twentieth session: a file that opened but held
	// garbage failed every connect, and ConnectNATSWithRetry retried it for
	// ever ("NATS not reachable; retrying") instead of exit 2.
	if err := cfg.CheckFiles(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: we closed the connection ourselves
				log.Warn().Err(err).Msg("NATS disconnected")
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info().Msg("NATS reconnected") }),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: nats.nkey_file %s: %w", ErrBadConfig, cfg.NKeyFile, err)
		}
		opts = append(opts, o)
	}
	if cfg.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CAFile))
	}
	if cfg.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.CertFile, cfg.TLS.KeyFile))
	}
	if cfg.TLS.Enabled {
		opts = append(opts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	// nats.Connect applies the options (RootCAs and ClientCert read their
	// files then) before it dials, and returns their errors like a dial's:
	// applied here first, an error is bad configuration, not an outage.
	var probe nats.Options
	for _, o := range opts {
		if err := o(&probe); err != nil {
			return nil, fmt.Errorf("%w: nats: %w", ErrBadConfig, err)
		}
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", config.RedactNATSURL(cfg.URL), config.RedactConnectError(err, cfg.URL))
	}
	return nc, nil
}

// ErrDataDirInUse is returned (wrapped) by StartEmbedded when another
// embedded server, in this process or another, holds the data dir: two
// JetStream servers writing one store would corrupt it.
var ErrDataDirInUse = errors.New("embedded: data dir in use by another embedded server")

// embeddedLockFile is the file under the data dir whose lock an embedded
// server holds while it runs.
const embeddedLockFile = ".agentfleet.lock"

// Embedded is an in-process nats-server (the embedded mode) that holds its
// data dir's lock until Close.
type Embedded struct {
	*server.Server
	lock      *flock.Flock
	closeOnce sync.Once
}

// Close shuts the server down, waits until it has, and then releases the
// data dir. It may be called more than once.
func (e *Embedded) Close() {
	e.closeOnce.Do(func() {
		e.Shutdown()
		e.WaitForShutdown()
		_ = e.lock.Unlock()
	})
}

// StartEmbedded starts an in-process nats-server with JetStream storing
// under cfg.DataDir, listening on 127.0.0.1:cfg.Port (-1: a free port; 0:
// config.DefaultEmbeddedPort, 4223). It first takes an exclusive lock on
// the data dir (a file lock, released by Close or when the process ends)
// and fails with ErrDataDirInUse if another embedded server holds it. A
// data dir that cannot be created is an error matching ErrBadConfig.
func StartEmbedded(cfg config.Embedded, log zerolog.Logger) (*Embedded, error) {
	cfg = cfg.WithDefaults()
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		// A data dir that cannot be created (under a regular file, on a
		// read-only volume, without permission) fails the same way on
		// every start: bad configuration, exit 2 (found in review,
		// twenty-second session: exit 1, restarted for ever).
		return nil, fmt.Errorf("%w: embedded.data_dir: %w", ErrBadConfig, err)
	}
	lock := flock.New(filepath.Join(dir, embeddedLockFile))
	locked, err := lock.TryLock()
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOTDIR) {
			// A data dir that exists and cannot be written (a read-only
			// volume mounted at it): as above (found in review of this
			// session's fix, twenty-second session).
			return nil, fmt.Errorf("%w: embedded.data_dir: lock %s: %w", ErrBadConfig, dir, err)
		}
		return nil, fmt.Errorf("embedded: lock data dir %s: %w", dir, err)
	}
	if !locked {
		return nil, fmt.Errorf("%w: %s (stop the other worker, or give this one its own embedded.data_dir)", ErrDataDirInUse, dir)
	}
	started := false
	defer func() {
		if !started {
			_ = lock.Unlock()
		}
	}()
	s, err := server.NewServer(&server.Options{
		ServerName: "agentfleet-embedded", Host: "127.0.0.1", Port: cfg.Port,
		JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(15 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		if cfg.Port < 0 {
			return nil, errors.New("embedded: server on a free port of 127.0.0.1 not ready within 15s")
		}
		return nil, fmt.Errorf("embedded: server on 127.0.0.1:%d not ready within 15s (is the port taken? set embedded.port)", cfg.Port)
	}
	started = true
	log.Info().Str("mode", "embedded").Str("url", s.ClientURL()).Str("data_dir", dir).
		Msg("embedded NATS server with JetStream started")
	return &Embedded{Server: s, lock: lock}, nil
}

// ConnectRedis returns a client for cfg (URL, username, password, TLS) and
// checks that it answers. A URL that can never connect
// (config.CheckRedisURL) is an error matching ErrBadConfig.
//
// A Sentinel URL (config.ParseRedisURL: the query sets master_name) gives
// go-redis's failover client, which asks the Sentinels for the current
// primary and follows a failover; redis.username, redis.password and
// redis.tls are the primary's as for one server (TLS the Sentinels' too),
// and the Sentinels' credentials are the URL's user info.
//
// The client does not retry commands itself (go-redis's MaxRetries is -1
// unless the URL sets a positive max_retries): go-redis would send a command again
// after a reset connection even when Redis had applied it, and a script
// that books a refund, counts an attempt or appends an event is not safe
// to apply twice. A failed command is the caller's error instead, and the
// worker's own layer retries: the message goes back with a delay and the
// records decide what still has to run.
func ConnectRedis(ctx context.Context, cfg config.Redis) (*redis.Client, error) {
	c, err := newRedisClient(cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: %s does not answer: %w", config.RedactURL(cfg.URL), err)
	}
	return c, nil
}

// newRedisClient is ConnectRedis without the check that the client
// answers: one server's client, or a Sentinel URL's failover client.
func newRedisClient(cfg config.Redis) (*redis.Client, error) {
	// A URL that can never connect is bad configuration (exit 2), not a
	// failure a restart may fix (found in review, eighteenth session).
	opts, failover, err := config.ParseRedisURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: redis.url: %w", ErrBadConfig, err)
	}
	var tc *tls.Config
	if cfg.TLS.Enabled || cfg.TLS.CAFile != "" || cfg.TLS.CertFile != "" || cfg.TLS.KeyFile != "" {
		// A file that cannot be used fails every start the same way: bad
		// configuration (exit 2), naming the key (found in review,
		// twentieth session: exit 1, "tls: ca file: ...").
		if err := cfg.TLS.CheckFiles("redis.tls"); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		if tc, err = tlsConfig(cfg.TLS); err != nil {
			return nil, fmt.Errorf("%w: redis.tls: %w", ErrBadConfig, err)
		}
	}
	if failover != nil {
		// Found in review, twenty-fifth session: the README's Sentinel
		// deployment could not be configured (redis.ParseURL refused
		// master_name), so workers never followed a failover.
		failover.MaxRetries = noRetries(failover.MaxRetries)
		override(cfg, tc, &failover.Username, &failover.Password, &failover.TLSConfig)
		return redis.NewFailoverClient(failover), nil
	}
	opts.MaxRetries = noRetries(opts.MaxRetries)
	override(cfg, tc, &opts.Username, &opts.Password, &opts.TLSConfig)
	return redis.NewClient(opts), nil
}

// override puts the configuration's own username, password and TLS (tc),
// where set, in place of the URL's: a client's or, behind Sentinel, the
// primary's.
func override(cfg config.Redis, tc *tls.Config, username, password *string, tlsConfig **tls.Config) {
	if cfg.Username != "" {
		*username = cfg.Username
	}
	if cfg.Password != "" {
		*password = cfg.Password
	}
	if tc != nil {
		*tlsConfig = tc
	}
}

// noRetries returns the MaxRetries for a URL's max_retries: -1 (none) when
// it is not set or is max_retries=0 (which go-redis would read as its
// default of 3). Only an explicit positive max_retries turns them on.
func noRetries(maxRetries int) int {
	if maxRetries <= 0 {
		return -1
	}
	return maxRetries
}

// StoreClient returns the client the stores use on c: c's auto-pipeliner
// when cfg.AutoPipeline is set (config redis.auto_pipeline, the default),
// else c. The auto-pipeliner is a redis.UniversalClient on c whose single
// commands, scripts included, are queued and sent in shared batches, one
// batch at a time on one connection, so invocations running at once share
// a write and a read instead of a round trip each. Transactions
// (TxPipelined) and pipelines run on c's pool as before. A batch is never
// sent again after a failure unless c's options allow retries (ConnectRedis
// turns them off), so a script is applied at most once, as on c. Closing c
// closes it.
//
// What changes with it: a command's context is not looked at once the
// command is handed over, so one whose context has already ended is still
// sent (c refuses it before sending) and its caller gets Redis's real
// reply, never an ambiguous one; the wait is bounded by the batch ahead of
// it and c's read and write timeouts (on c alone, by the timeouts too:
// go-redis's ContextTimeoutEnabled is off), and the lease renewers never
// wait on a renewal past the lease's end. One batch is in flight at a
// time, so a reply lost on the shared connection makes the outcome of
// every command in that batch unknown, each caller's error as on c.
func StoreClient(c *redis.Client, cfg config.Redis) (redis.UniversalClient, error) {
	if !cfg.AutoPipeline {
		return c, nil
	}
	ap, err := c.AutoPipeline()
	if err != nil {
		return nil, fmt.Errorf("redis: auto-pipeline: %w", err)
	}
	// The pipeliner does not tell whether its client resends a command
	// whose reply was lost; the stores need to know (redisMayResend).
	pipelinerResends.Store(ap, support.MayResend(c))
	return ap, nil
}

// pipelinerResends records, for each auto-pipeliner StoreClient made,
// whether its client may resend a command (support.MayResend of it).
var pipelinerResends sync.Map // *redis.AutoPipeliner → bool

// ConnectNATSWithRetry is ConnectNATS retried with backoff (0.5 s doubling
// to 5 s) until it succeeds or ctx ends, so a worker started while NATS is
// down (a restart, a rolling upgrade) waits for it instead of exiting. A URL
// that can never connect (config.CheckNATSURL), and any error of
// ConnectNATS matching ErrBadConfig (a credential or certificate file that
// cannot be used), is returned at once.
func ConnectNATSWithRetry(ctx context.Context, cfg config.NATS, name string, log zerolog.Logger) (*nats.Conn, error) {
	// A URL that can never connect is not retried (found in review,
	// eighteenth session: it was, for ever, as if NATS were down).
	// config.Worker.Validate refuses it first; this holds for callers
	// that did not validate.
	if cfg.URL != "" {
		if err := config.CheckNATSURL(cfg.URL); err != nil {
			return nil, fmt.Errorf("%w: nats.url: %w", ErrBadConfig, err)
		}
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 500*time.Millisecond, 5*time.Second, 0
	for {
		nc, err := ConnectNATS(cfg, name, log)
		if err == nil {
			return nc, nil
		}
		if errors.Is(err, ErrBadConfig) {
			return nil, err // fails the same way on every try
		}
		d := b.NextBackOff()
		log.Warn().Err(err).Dur("retry_in", d).Msg("NATS not reachable; retrying")
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}
