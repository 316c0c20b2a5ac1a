package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/session/natssession"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
	"github.com/agentfleet/agentfleet/pkg/idempotency/natskv"
	"github.com/agentfleet/agentfleet/pkg/providers/sim"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// NewLogger returns the JSON logger every command uses.
func NewLogger(w io.Writer, level string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

// StreamsConfig maps the worker's configuration to the stream topology.
func StreamsConfig(c config.Worker) streams.Config {
	return streams.Config{
		RequestsStream: c.Streams.Requests, ResultsStream: c.Streams.Results, DLQStream: c.Streams.DLQ,
		RequestPrefix: c.Streams.RequestPrefix, ResultPrefix: c.Streams.ResultPrefix, DLQPrefix: c.Streams.DLQPrefix,
		WorkerConsumer: c.Streams.Consumer, RequestDuplicates: c.Streams.DuplicateWindow,
		ResultsMaxAge: c.Streams.ResultsMaxAge, DLQMaxAge: c.Streams.DLQMaxAge, Replicas: c.Streams.Replicas,
		WorkerAckWait: c.Streams.AckWait, WorkerMaxAckPending: maxAckPending(c),
		WorkerStores: StoresIdentity(c),
	}.WithDefaults()
}

func maxAckPending(c config.Worker) int {
	if c.Streams.MaxAckPending > 0 {
		return c.Streams.MaxAckPending
	}
	return max(64, c.Worker.Concurrency*4)
}

// Infra is a connected deployment: NATS (embedded or remote), optional
// Redis, the stores and the stream topology.
type Infra struct {
	NC      *nats.Conn          // NC is the NATS connection.
	JS      jetstream.JetStream // JS is the JetStream context on NC.
	Redis   *redis.Client       // Redis is the Redis client, or nil when not used.
	Stores  *Stores             // Stores are the fleet's state stores.
	Streams streams.Config      // Streams is the stream topology.
	close   []func()
}

// Close releases the connections and stops an embedded server.
func (i *Infra) Close() {
	for k := len(i.close) - 1; k >= 0; k-- {
		i.close[k]()
	}
}

// Connect brings up NATS (starting the embedded server when configured),
// connects Redis when a URL is set (and reads the stores' id there,
// RedisStoresID), ensures the streams and consumers (the worker consumer
// records the stores: a worker on other stores is refused), and opens the
// stores. A refusal that the live server or the consumer's record repeats
// on every start matches ErrBadConfig. It logs which mode runs.
func Connect(ctx context.Context, cfg config.Worker, log zerolog.Logger) (*Infra, error) {
	inf := &Infra{Streams: StreamsConfig(cfg)}
	ok := false
	defer func() {
		if !ok {
			inf.Close()
		}
	}()
	url := cfg.NATS.URL
	if cfg.Embedded.Enabled {
		srv, err := StartEmbedded(cfg.Embedded, log)
		if err != nil {
			return nil, err
		}
		inf.close = append(inf.close, srv.Close)
		url = srv.ClientURL()
	} else {
		log.Info().Str("mode", "external").Str("url", config.RedactNATSURL(url)).Msg("connecting to NATS")
	}
	ncfg := cfg.NATS
	ncfg.URL = url
	if cfg.Embedded.Enabled {
		// The embedded server has no credentials and no TLS: the files of
		// nats.* name the external server's (Validate skips them in
		// embedded mode). Passed on, a stale creds path exited 2 and a CA
		// file made the client demand TLS, retrying for ever (found in
		// review, twentieth session).
		ncfg = config.NATS{URL: url}
	}
	nc, err := ConnectNATSWithRetry(ctx, ncfg, cfg.Worker.Name, log)
	if err != nil {
		return nil, err
	}
	inf.NC = nc
	inf.close = append(inf.close, func() {
		// The worker has acked or Nak'ed everything by now, without
		// waiting for confirmations: a flush (PING/PONG) makes sure the
		// server has them before the connection goes.
		_ = nc.FlushTimeout(5 * time.Second)
		nc.Close()
	})
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	inf.JS = js
	// Redis first: the worker consumer records the stores, and a Redis
	// store is named by the id it keeps in Redis itself.
	var rdb redis.UniversalClient
	if cfg.Redis.URL != "" {
		c, err := ConnectRedis(ctx, cfg.Redis)
		if err != nil {
			return nil, err
		}
		inf.Redis = c
		inf.close = append(inf.close, func() { _ = c.Close() })
		if rdb, err = StoreClient(c, cfg.Redis); err != nil {
			return nil, err
		}
		ictx, icancel := context.WithTimeout(ctx, 5*time.Second)
		id, err := RedisStoresID(ictx, c, cfg.Redis.Prefix)
		icancel()
		if err != nil {
			return nil, err
		}
		inf.Streams.WorkerStores = RedisStoresIdentity(cfg, id)
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if cfg.Redis.URL != "" {
		if _, err := adoptEarlierStoresRecord(ectx, js, inf.Streams, StoresIdentity(cfg), log); err != nil {
			return nil, err
		}
	}
	applied, err := streams.Ensure(ectx, js, inf.Streams)
	if errors.Is(err, streams.ErrStoresDiffer) && cfg.Redis.URL != "" {
		// An earlier-version worker may have rewritten the record, without
		// the id, between the adoption and Ensure (a mixed fleet
		// restarting): adopt it again, once.
		adopted, aerr := adoptEarlierStoresRecord(ectx, js, inf.Streams, StoresIdentity(cfg), log)
		if aerr != nil {
			return nil, aerr
		}
		if adopted {
			applied, err = streams.Ensure(ectx, js, inf.Streams)
		}
	}
	if errors.Is(err, streams.ErrInvalidConfig) {
		// The live streams refuse this configuration (another subject
		// prefix): restarting cannot help.
		return nil, fmt.Errorf("%w: streams: %w", ErrBadConfig, err)
	}
	if errors.Is(err, streams.ErrStoresDiffer) {
		// Workers with other stores consume the same requests: a
		// redelivery between them would repeat effects. Restarting
		// cannot help.
		var hints []string
		if cfg.Redis.URL != "" {
			// Found in review, nineteenth session: another Redis server
			// with the same db and prefix was taken for the same stores.
			hints = append(hints, fmt.Sprintf("a Redis store's id is the one its server keeps at %s%s: another id is another Redis server, "+
				"or one that lost its data, idempotency records included", cfg.Redis.Prefix, StoresIDKey))
		}
		if cfg.Embedded.Enabled {
			hints = append(hints, fmt.Sprintf("embedded NATS: its data dir %s holds the other workers' consumer; give this worker another --data-dir",
				cfg.Embedded.DataDir))
		}
		if len(hints) > 0 {
			return nil, fmt.Errorf("%w: %w (%s)", ErrBadConfig, err, strings.Join(hints, "; "))
		}
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == JSReplicasNotSupported {
		// "replicas > 1 not supported in non-clustered mode": the server
		// will refuse it on every start.
		return nil, fmt.Errorf("%w: streams.replicas %d needs a clustered NATS: %w", ErrBadConfig, inf.Streams.WithDefaults().Replicas, err)
	}
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == JSConsumerWQNotUnique || apiErr.ErrorCode == JSConsumerWQMultipleUnfiltered) {
		// Found in review, nineteenth session: these exited 1, a restart
		// loop. Name the consumers that may hold the requests.
		sc := inf.Streams.WithDefaults()
		if others := otherConsumers(ctx, js, sc.RequestsStream, sc.WorkerConsumer); others != "" {
			err = fmt.Errorf("%w [other consumers on %s: %s]", err, sc.RequestsStream, others)
		}
	}
	if bad := ServerRefusal(err); bad != nil {
		// A setting the live server refuses on every start (found in
		// review, nineteenth session: it exited 1, a restart loop).
		return nil, bad
	}
	if err != nil {
		return nil, fmt.Errorf("streams: %w", err)
	}
	for _, a := range applied {
		if a.KeptReplicas > 0 {
			log.Warn().Str("stream", a.Config.Name).Int("replicas", a.KeptReplicas).Int("configured", inf.Streams.WithDefaults().Replicas).
				Msg("stream has more replicas than streams.replicas; kept them (lower them by hand, nats stream edit, if that is meant)")
		}
		if a.KeptMaxAge {
			warnKeptMaxAge(log, inf.Streams, a.Config)
		}
	}
	st, err := OpenStores(ctx, cfg, js, rdb)
	if err != nil {
		return nil, err
	}
	inf.Stores = st
	log.Info().Str("stores", st.Mode).Msg("stores open")
	if err := checkLiveDLQ(ectx, js, inf.Streams, st.IdempotencyRetention); err != nil {
		return nil, err
	}
	if st.Mode == "nats-kv" {
		warnLongerBucket(log, natskv.DefaultBucket, st.IdempotencyRetention, cfg.Idempotency.Retention)
		if r, ok := st.Invocations.(interface{ Retention() time.Duration }); ok {
			warnLongerBucket(log, natssession.DefaultInvocationBucket, r.Retention(), cfg.Idempotency.Retention)
		}
	}
	ok = true
	return inf, nil
}

// RunWorker runs one worker process until ctx ends (SIGTERM), then drains.
// A ctx that ends while the worker is still starting (waiting for NATS, say)
// is a clean stop too: RunWorker returns nil, not the interrupted step's
// error. A start-up that fails for any other reason returns its error.
func RunWorker(ctx context.Context, cfg config.Worker, getenv func(string) string, logOut io.Writer) error {
	r, err := StartWorker(ctx, cfg, getenv, logOut)
	if err != nil {
		if stoppedWhileStarting(ctx, err) {
			log := NewLogger(logOut, cfg.LogLevel)
			log.Info().Str("worker", cfg.Worker.Name).Str("cause", err.Error()).
				Msg("worker stopped before it started consuming")
			return nil
		}
		return err
	}
	return r.Wait()
}

// stoppedWhileStarting reports a start-up error that is only ctx ending: the
// step it interrupted failed with ctx's own error.
func stoppedWhileStarting(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// Running is a started worker process.
type Running struct {
	// Infra is the worker's connections and stores.
	Infra *Infra
	// Registry holds the process's metrics.
	Registry *prometheus.Registry
	// Log is the process logger.
	Log  zerolog.Logger
	http *HTTPServer // nil without a metrics address
	done chan error
}

// Wait blocks until the worker stopped (its context ended and it drained),
// then stops the HTTP server (which served /metrics through the drain, with
// /readyz answering not ready) and releases its connections.
func (r *Running) Wait() error {
	err := <-r.done
	if r.http != nil {
		r.http.Shutdown()
	}
	r.Infra.Close()
	r.Log.Info().Msg("worker stopped")
	return err
}

// StartWorker checks what the configuration derives (CheckDerived) and
// builds the model provider (Provider) before anything connects, so a
// configuration that can never work is an error matching ErrBadConfig at
// once; then it connects, builds the agent and starts consuming in the
// background until ctx ends. With a metrics address it serves /metrics,
// /healthz and /readyz (NATS connected, stores answering, the worker
// fetching: not ready while its fetches fail and from the end of ctx on)
// until the worker has drained. Call Wait after ctx ends: it stops the
// HTTP server and releases the connections.
func StartWorker(ctx context.Context, cfg config.Worker, getenv func(string) string, logOut io.Writer) (_ *Running, err error) {
	log := NewLogger(logOut, cfg.LogLevel).With().Str("worker", cfg.Worker.Name).Logger()
	RouteRedisLogs(log)
	mode := "external"
	if cfg.Embedded.Enabled {
		mode = "embedded"
	}
	ev := log.Info().Str("mode", mode).Str("model", cfg.Model.Spec).Str("redis", config.RedactURL(cfg.Redis.URL))
	if cfg.Redis.URL != "" {
		ev = ev.Bool("redis_auto_pipeline", cfg.Redis.AutoPipeline)
	}
	ev.Int("concurrency", cfg.Worker.Concurrency).Msg("agentfleet worker starting")
	if err := CheckDerived(cfg); err != nil {
		return nil, err
	}
	if cfg.Model.Spec == "sim" && cfg.Model.Sim.Seed == 0 {
		// No model.sim.seed: this worker draws its own, not the fleet's
		// (left open in the twenty-third session: every worker drew the
		// same faults), one for the model and the tool faults alike, so the
		// seed Provider logs reruns both.
		cfg.Model.Sim.Seed = sim.NewSeed()
	}
	// The provider is built before anything connects: a model setting
	// that can never work (simulated faults that do not parse, a missing
	// API key, a base URL that does not parse) is bad configuration, found
	// at once, not after waiting for NATS for ever (found in review,
	// twenty-second session).
	provider, err := Provider(ctx, cfg.Model, getenv, log)
	if err != nil {
		return nil, err
	}

	// /healthz answers from before the connection on: a worker waits for
	// NATS by design, and a liveness probe that found no server restarted
	// it while it waited (found in review, twenty-second session). /readyz
	// answers "starting: not ready" until the worker's checks are set.
	reg := prometheus.NewRegistry()
	var ready atomic.Pointer[map[string]Check]
	var srv *HTTPServer
	if cfg.MetricsAddr != "" {
		srv, err = startHTTP(cfg.MetricsAddr, reg, func() map[string]Check {
			if checks := ready.Load(); checks != nil {
				return *checks
			}
			return nil
		}, log)
		if err != nil {
			return nil, fmt.Errorf("metrics_addr %s: %w", cfg.MetricsAddr, err)
		}
		defer func() {
			if err != nil {
				srv.Shutdown()
			}
		}()
		log.Info().Str("addr", srv.Addr()).Msg("serving /metrics, /healthz, /readyz")
	}

	inf, err := Connect(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			inf.Close()
		}
	}()

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tm := taxonomy.NewMetrics(reg)
	im := idempotency.NewMetrics(reg)
	wm := worker.NewMetrics(reg)
	am := agent.NewMetrics(reg)
	cm := cooldown.NewMetrics(reg)

	chain, err := ModelChain(provider, cfg.Model, inf.Stores.Cooldown, cfg.Cooldown, tm, cm)
	if err != nil {
		return nil, err
	}
	// The series the "any increase" alerts watch exist from the start, at
	// 0: a first event after a restart is an increase() the alerts see
	// (configs/prometheus). Unknown tools' names cannot be known here; their
	// alert has terms of its own for a restart.
	tm.Init(chain.Name())
	sup := SupportAgent(cfg, chain, inf.Stores, tm, im, log)
	wm.Init(sup.Name)
	im.Init(sup.Name, support.RefundOrderTool)
	runner := &agent.Runner{Agent: sup, Sessions: inf.Stores.Sessions, Logger: log, Metrics: am}

	w, err := worker.New(ctx, worker.Config{
		Name: cfg.Worker.Name, Concurrency: cfg.Worker.Concurrency, MaxDeliveries: cfg.Worker.MaxDeliveries,
		AckWait: cfg.Streams.AckWait, DrainTimeout: cfg.Worker.DrainTimeout, BusyDelay: cfg.Worker.BusyDelay, BusyRequeueAfter: cfg.Worker.BusyRequeueAfter,
		InfraBackoffMax: cfg.Worker.InfraBackoffMax, SessionLease: cfg.Worker.SessionLease,
		MaxRequestBytes: cfg.Streams.MaxRequestBytes, CooldownCheckInterval: cfg.Cooldown.CheckInterval,
	}, worker.Deps{
		JS: inf.JS, Streams: inf.Streams,
		Agents:      map[string]*agent.Runner{sup.Name: runner},
		Locker:      inf.Stores.Locker,
		Invocations: inf.Stores.Invocations,
		Gate:        inf.Stores.Gate,
		Cooldown:    workerCooldown(cfg, inf.Stores.Cooldown),
		DLQ:         dlq.NewPublisher(inf.JS, dlq.Config{Stream: inf.Streams.DLQStream, Prefix: inf.Streams.DLQPrefix}),
		Logger:      log,
		Metrics:     wm,
	})
	if err != nil {
		return nil, err
	}
	r := &Running{Infra: inf, Registry: reg, Log: log, done: make(chan error, 1)}
	if srv != nil {
		sc := inf.Streams.WithDefaults()
		// The server outlives ctx: Running.Wait stops it once the worker
		// has drained, so what the drain counts is still scraped. /readyz
		// answers not ready from the end of ctx on (the worker check).
		ready.Store(&map[string]Check{
			"nats": func(context.Context) error {
				if !inf.NC.IsConnected() {
					return errors.New("nats not connected")
				}
				return nil
			},
			"stores":  inf.Stores.Ping,
			"streams": newStreamsCheck(inf.JS, sc.RequestsStream, sc.ResultsStream, sc.DLQStream).Check,
			"worker":  func(context.Context) error { return w.Ready() },
		})
		r.http = srv
	}
	go func() { r.done <- w.Run(ctx) }()
	return r, nil
}

// warnLongerBucket logs a bucket that keeps records longer than this
// worker's idempotency.retention (kvbucket.KeepLonger: another process, or
// an earlier configuration, set it, and a worker never lowers it).
func warnLongerBucket(log zerolog.Logger, bucket string, maxAge, configured time.Duration) {
	if maxAge == configured {
		return
	}
	log.Warn().Str("bucket", bucket).Dur("bucket_max_age", maxAge).Dur("configured", configured).
		Msg("the bucket keeps records longer than idempotency.retention and workers never lower it; to shorten it, edit it by hand (nats stream edit KV_" + bucket + ")")
}

// warnKeptMaxAge logs a stream (the results or the DLQ stream) whose
// longer or unlimited max age streams.Ensure kept (live, the configuration
// it has now) where sc asks for a shorter one: workers never shorten it,
// so an operator who lowered streams.results_max_age or
// streams.dlq_max_age is told that the setting was not applied, and how
// to apply it by hand (found in review, twenty-fifth session: only kept
// replicas were logged).
func warnKeptMaxAge(log zerolog.Logger, sc streams.Config, live jetstream.StreamConfig) {
	sc = sc.WithDefaults()
	key, configured := "streams.results_max_age", sc.ResultsMaxAge
	if live.Name == sc.DLQStream {
		key, configured = "streams.dlq_max_age", sc.DLQMaxAge
	}
	keeps := "entries for " + maxAgeArg(live.MaxAge)
	if live.MaxAge == 0 {
		keeps = "entries forever (max age 0)"
	}
	log.Warn().Str("stream", live.Name).Dur("stream_max_age", live.MaxAge).Dur("configured", configured).
		Msg(fmt.Sprintf("the stream keeps %s, longer than %s %s, and workers never shorten it; to shorten it, "+
			"set %s in every process's configuration first, then edit it by hand (nats stream edit %s --max-age %s)",
			keeps, key, maxAgeArg(configured), key, live.Name, maxAgeArg(configured)))
}

// maxAgeArg formats d for nats stream edit --max-age: whole hours as
// "336h", any other duration as time.Duration prints it.
func maxAgeArg(d time.Duration) string {
	if d > 0 && d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}

// checkLiveDLQ is idempotency.ValidateRetention of the records' retention
// (Stores.IdempotencyRetention: on NATS KV the bucket's, 0 for none) against
// the DLQ stream's max age as the server has it: streams.Ensure never
// shortens it, so it may be another worker's longer one, and a worker whose
// records expire before those dead letters would let their replay repeat
// effects. It fails the start-up with what to change.
func checkLiveDLQ(ctx context.Context, js jetstream.JetStream, sc streams.Config, retention time.Duration) error {
	live, err := streams.DLQMaxAge(ctx, js, sc)
	if err != nil {
		return err
	}
	if retention == 0 || idempotency.ValidateRetention(retention, live) == nil {
		return nil
	}
	name := sc.WithDefaults().DLQStream
	if live == 0 {
		return fmt.Errorf("%w: config: idempotency.retention: the live DLQ stream %s keeps entries forever (max age 0, set by hand?), so no retention of idempotency records outlives them: "+
			"give it a max age (nats stream edit %s --max-age 336h)", ErrBadConfig, name, name)
	}
	return fmt.Errorf("%w: config: idempotency.retention %v does not outlive the live DLQ stream %s, which keeps entries %v "+
		"(another worker's or an earlier streams.dlq_max_age: workers never shorten it): set idempotency.retention to at least %v, "+
		"or shorten the stream by hand first (nats stream edit %s --max-age <age>)",
		ErrBadConfig, retention, name, live, live+idempotency.RetentionSlack, name)
}

// adoptEarlierStoresRecord rewrites the stores the worker consumer records
// from legacy (StoresIdentity: what workers of earlier versions recorded
// for a Redis store, without its id) to sc.WorkerStores, so that upgrading
// a fleet does not lock it out of its own consumer: those workers were on
// the same db and prefix, and the stores' id is taken to be this server's.
// Any other record, and a missing consumer or stream, is left to
// streams.Ensure.
//
// The record is written as streams.WorkerConsumerDescription writes it:
// the id before the "; stores: " mark, legacy after it, so that an
// earlier-version worker that restarts later (a crash mid-rollout, a
// rollback) still reads its own stores there and joins. It rewrites the
// description without the id, and the next worker of this version adopts
// the record again. The consequence: while earlier-version workers run, the
// record often carries no id, so a worker of this version on another Redis
// server with the same db and prefix may adopt it with that server's id;
// it is caught only when another worker of this version starts (the one
// whose id differs from the record is refused, ErrStoresDiffer, both ids
// named), not at its own start; an earlier-version worker on another
// Redis server is never caught (it knows of no id, as before the upgrade).
//
// Like Ensure it reads and then writes: two workers of this version on two
// Redis servers that start at the same moment against an earlier record
// can both adopt it (the last write wins, and the other's next start is
// refused), as two first workers can both create the consumer. An
// earlier-version worker can also rewrite the record between this adoption
// and Ensure: Connect then adopts once more (adopted reports a rewrite).
func adoptEarlierStoresRecord(ctx context.Context, js jetstream.JetStream, sc streams.Config, legacy string, log zerolog.Logger) (adopted bool, err error) {
	sc = sc.WithDefaults()
	cur, err := js.Consumer(ctx, sc.RequestsStream, sc.WorkerConsumer)
	if err != nil {
		// No consumer (or no stream) yet, or the server does not answer:
		// Ensure creates it, or reports the error.
		return false, nil
	}
	cc := cur.CachedInfo().Config
	if legacy == "" || sc.WorkerStores == "" || streams.WorkerStoresOf(cc.Description) != legacy {
		return false, nil
	}
	cc.Description = streams.WorkerConsumerDescription(sc.WorkerConsumerConfig().Description, sc.WorkerStores)
	if _, err := js.UpdateConsumer(ctx, sc.RequestsStream, cc); err != nil {
		return false, fmt.Errorf("streams: consumer %s on %s: record stores %q in place of %q: %w", sc.WorkerConsumer, sc.RequestsStream, sc.WorkerStores, legacy, err)
	}
	log.Info().Str("consumer", sc.WorkerConsumer).Str("was", legacy).Str("stores", sc.WorkerStores).
		Msg("the worker consumer recorded the stores without their id (an earlier version, or an earlier-version worker restarted); recorded this Redis's id")
	return true, nil
}

// workerCooldown is the fleet cooldown the worker checks before it starts a
// request: none when cooldown.disabled turns the breaker off, which the
// model wrapper honours too (the worker went on putting requests back while
// another worker's cooldown was open).
func workerCooldown(cfg config.Worker, store cooldown.Store) cooldown.Store {
	if cfg.Cooldown.Disabled {
		return nil
	}
	return store
}
