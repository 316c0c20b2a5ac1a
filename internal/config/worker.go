package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// Worker is the worker's configuration. The yaml tags are the keys of
// configs/worker.yaml.
type Worker struct {
	// NATS connection. An empty URL means embedded mode.
	NATS NATS `yaml:"nats"`
	// Embedded runs an in-process nats-server with JetStream and NATS KV
	// stores, so the worker needs no services. It is on when NATS.URL is
	// empty.
	Embedded Embedded `yaml:"embedded"`
	// Redis holds sessions, idempotency records, locks and the cooldown.
	// An empty URL means the NATS KV stores are used instead.
	Redis Redis `yaml:"redis"`
	// Streams names the JetStream streams and consumers.
	Streams Streams `yaml:"streams"`
	// Worker tunes consumption.
	Worker Consume `yaml:"worker"`
	// Model chooses and tunes the model.
	Model Model `yaml:"model"`
	// Idempotency tunes tool-effect records.
	Idempotency Idempotency `yaml:"idempotency"`
	// Cooldown is the fleet-wide per-model breaker.
	Cooldown cooldown.Config `yaml:"cooldown"`
	// MetricsAddr serves /metrics, /healthz and /readyz ("" disables).
	MetricsAddr string `yaml:"metrics_addr"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
}

// NATS is how to reach the NATS server.
type NATS struct {
	URL       string `yaml:"url"`        // URL is the server URL ("" means embedded mode).
	CredsFile string `yaml:"creds_file"` // CredsFile is a NATS user credentials file.
	NKeyFile  string `yaml:"nkey_file"`  // NKeyFile is an NKey seed file.
	TLS       TLS    `yaml:"tls"`        // TLS configures TLS to the server.
}

// TLS names certificate files. Empty fields are not used.
type TLS struct {
	CAFile   string `yaml:"ca_file"`   // CAFile is the CA bundle that verifies the server.
	CertFile string `yaml:"cert_file"` // CertFile is the client certificate.
	KeyFile  string `yaml:"key_file"`  // KeyFile is the client certificate's key.
	// Enabled turns TLS on with the system roots when no file is named.
	Enabled bool `yaml:"enabled"`
}

// Embedded configures the in-process NATS server.
type Embedded struct {
	Enabled bool   `yaml:"enabled"`  // Enabled runs the embedded server (forced on when NATS.URL is empty).
	DataDir string `yaml:"data_dir"` // DataDir holds the server's data (default ".data/agentfleet").
	// Port of the embedded server (-1 picks a free one; 0 means
	// DefaultEmbeddedPort, 4223, so that producer and replayer commands on
	// the same machine can reach it). Not NATS's own 4222: that is the
	// machine's NATS server.
	Port int `yaml:"port"`
}

// DefaultEmbeddedPort is the embedded server's port when Embedded.Port is 0.
const DefaultEmbeddedPort = 4223

// WithDefaults returns e with a zero Port set to DefaultEmbeddedPort.
func (e Embedded) WithDefaults() Embedded {
	if e.Port == 0 {
		e.Port = DefaultEmbeddedPort
	}
	return e
}

// Redis is how to reach Redis.
type Redis struct {
	URL      string `yaml:"url"`      // URL is the Redis URL, one server or Sentinel (ParseRedisURL; "" means NATS KV stores).
	Username string `yaml:"username"` // Username overrides the URL's user name when set.
	Password string `yaml:"password"` // Password overrides the URL's password when set.
	TLS      TLS    `yaml:"tls"`      // TLS configures TLS to Redis.
	// Prefix is put before every key the fleet writes (default "af:"). The
	// demo refunds list is not prefixed: it is demo:refunds.
	Prefix string `yaml:"prefix"`
	// DemoPrefix is put before the demo orders keys (default "": the list
	// is demo:refunds). Tests sharing one Redis set their own.
	DemoPrefix string `yaml:"demo_prefix"`
	// AutoPipeline (default true) sends the worker's Redis commands through
	// go-redis's auto-pipeliner (redis.Client.AutoPipeline): commands that
	// concurrent invocations issue at the same moment share one write and
	// one read on one connection instead of a round trip each. It never
	// re-sends a command (the client's max_retries still decides that), and
	// MULTI/EXEC transactions and pipelines still run on a connection of
	// their own. false gives each command its own round trip.
	AutoPipeline bool `yaml:"auto_pipeline"`
}

// Streams names streams and consumers and their limits.
type Streams struct {
	Requests string `yaml:"requests"` // Requests is the request stream (default "AGENT_REQUESTS").
	Results  string `yaml:"results"`  // Results is the result stream (default "AGENT_RESULTS").
	DLQ      string `yaml:"dlq"`      // DLQ is the dead-letter stream (default "AGENT_DLQ").
	Consumer string `yaml:"consumer"` // Consumer is the shared worker consumer (default "workers").
	// Subject prefixes: requests go to <request_prefix>.<agent>, results
	// to <result_prefix>.<invocation_id>, dead letters to
	// <dlq_prefix>.<class>.<agent>.
	RequestPrefix   string        `yaml:"request_prefix"`
	ResultPrefix    string        `yaml:"result_prefix"`    // ResultPrefix is the result subject prefix (default "agent.results").
	DLQPrefix       string        `yaml:"dlq_prefix"`       // DLQPrefix is the dead-letter subject prefix (default "agent.dlq").
	DuplicateWindow time.Duration `yaml:"duplicate_window"` // DuplicateWindow is the request stream's de-duplication window (default 10m).
	ResultsMaxAge   time.Duration `yaml:"results_max_age"`  // ResultsMaxAge is how long results are kept (default 24h).
	DLQMaxAge       time.Duration `yaml:"dlq_max_age"`      // DLQMaxAge is how long dead letters are kept (default 14 days).
	Replicas        int           `yaml:"replicas"`         // Replicas is each stream's replication factor (default 1).
	AckWait         time.Duration `yaml:"ack_wait"`         // AckWait is the worker consumer's AckWait (default 60s, at least 3s).
	// MaxAckPending is the shared worker consumer's MaxAckPending: how many
	// requests the whole fleet holds unacknowledged. Set it well above the
	// fleet's total concurrency (replicas × worker.concurrency; about 4 ×
	// that), not to it: a request put back with a delay (session busy,
	// model cooldown, own stores down) keeps its slot until it is
	// redelivered, so at exactly the fleet's concurrency each such request
	// leaves a worker's slot idle. (A request whose session is still busy
	// at its third delivery is requeued to the end of the stream, which
	// frees its slot: one hot session cannot hold them all.) 0 means this
	// worker's concurrency × 4, at least 64.
	MaxAckPending   int `yaml:"max_ack_pending"`
	MaxRequestBytes int `yaml:"max_request_bytes"` // MaxRequestBytes limits a request envelope's size (default envelope.DefaultMaxSize, 1 MiB less 16 KiB).
}

// Consume tunes how a worker takes work.
type Consume struct {
	// Name identifies this worker in logs and DLQ entries (default
	// hostname-pid).
	Name string `yaml:"name"`
	// Concurrency is the number of invocations run at once (default 8).
	Concurrency int `yaml:"concurrency"`
	// MaxDeliveries: an invocation started this often without finishing is
	// dead-lettered (default 5); busy-session and own-infrastructure Naks do
	// not count.
	MaxDeliveries int `yaml:"max_deliveries"`
	// DrainTimeout is how long in-flight invocations may finish on SIGTERM
	// before they are stopped at a step boundary and Nak'ed (default 25s).
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// BusyDelay is the NakWithDelay when the session is busy (default 2s).
	BusyDelay time.Duration `yaml:"busy_delay"`
	// BusyRequeueAfter: a message that finds its session busy on this
	// delivery or a later one is requeued to the end of the requests
	// stream instead of Nak'ed, which frees its MaxAckPending slot
	// (default 3; negative: never requeue; 1 is refused: a requeue with no
	// wait would spin).
	BusyRequeueAfter int `yaml:"busy_requeue_after"`
	// InfraBackoffMax caps the NakWithDelay when the worker's own stores
	// are down (default 30s; it starts at 1s and doubles per delivery).
	InfraBackoffMax time.Duration `yaml:"infra_backoff_max"`
	// SessionLease is the session lock lease, renewed while running
	// (default 30s): how long a crashed worker's sessions stay locked.
	SessionLease time.Duration `yaml:"session_lease"`
	// ToolTimeout bounds one tool call of the support agent (default 1m,
	// DefaultToolTimeout): the tool's context ends then, and the
	// model is answered {"reason":"timeout","retryable":true}; an
	// idempotent tool's record says its outcome is unknown, so a retry is
	// answered from it and never runs the effect again. Negative values are
	// rejected.
	ToolTimeout time.Duration `yaml:"tool_timeout"`
}

// Model chooses the model: "sim" (simulated, for demos), "gemini:<model>"
// (GEMINI_API_KEY or GOOGLE_API_KEY) or "openai:<model>" (OPENAI_API_KEY).
type Model struct {
	Spec          string `yaml:"spec"`            // Spec is "sim", "gemini:<model>" or "openai:<model>" (default "sim").
	OpenAIBaseURL string `yaml:"openai_base_url"` // OpenAIBaseURL overrides the OpenAI API endpoint.
	GeminiBaseURL string `yaml:"gemini_base_url"` // GeminiBaseURL overrides the Gemini API endpoint.
	// MaxModelCalls is the per-invocation model-call budget (default
	// DefaultSupportMaxModelCalls, 12, for the support agent; 0 means that
	// default, not pkg/agent's 500). Negative values are rejected by
	// Validate: pkg/agent reads them as "no limit", which only tests may
	// use.
	MaxModelCalls int   `yaml:"max_model_calls"`
	Retry         Retry `yaml:"retry"` // Retry tunes retries of model calls.
	Sim           Sim   `yaml:"sim"`   // Sim tunes the simulated provider.
}

// Retry tunes the retry decorator (see pkg/retry).
type Retry struct {
	Attempts         int           `yaml:"attempts"`           // Attempts is the total attempts per call, first included (default 2: one retry).
	Initial          time.Duration `yaml:"initial"`            // Initial is the base wait before the first retry (default 500ms).
	Max              time.Duration `yaml:"max"`                // Max caps the base wait (default 8s).
	HintCap          time.Duration `yaml:"hint_cap"`           // HintCap is the longest server retry hint honoured (default 30s).
	CountEachAttempt bool          `yaml:"count_each_attempt"` // CountEachAttempt charges every retry to the call budget.
	// AttemptTimeout bounds one provider attempt, request to last response
	// (default 2m, DefaultAttemptTimeout): an attempt still running
	// then fails as TIMEOUT and is retried like one, so a provider that
	// accepted the request and never answers cannot hold an invocation,
	// its session and its message for ever. Negative values are rejected.
	AttemptTimeout time.Duration `yaml:"attempt_timeout"`
	// BudgetMaxTokens and BudgetTokenRatio are the per-process retry budget
	// per model (gRPC retry throttling: a failure costs 1 token, a success
	// earns the ratio, no retry while tokens <= max/2). Defaults 10 and 0.1:
	// retries stay on up to roughly a 9% failure rate and stop during an
	// outage, so a dead provider costs one attempt per call once the first
	// few calls have drained the tokens, not 2 (attempts' default).
	BudgetMaxTokens  float64 `yaml:"budget_max_tokens"`
	BudgetTokenRatio float64 `yaml:"budget_token_ratio"` // BudgetTokenRatio is the tokens a success earns (default 0.1).
	// BudgetDisabled turns the retry budget off (every call may use all
	// attempts).
	BudgetDisabled bool `yaml:"budget_disabled"`
}

// Sim tunes the SIMULATED provider (demos, load and chaos runs only).
type Sim struct {
	Latency time.Duration `yaml:"latency"` // Latency is the simulated per-call latency (default 20ms).
	// Faults is a spec like "rate_limited=0.2,server=0.2".
	Faults string `yaml:"faults"`
	// Seed seeds the simulation's randomness (model and tool faults,
	// latency jitter): a worker given one draws the same sequence on every
	// run. 0, the default, is no seed: each worker draws one of its own
	// (logged at start), so the workers of a fleet do not fail in step.
	Seed uint64 `yaml:"seed"`
	// ToolFaults is the probability (0 to 1) that a call of the demo
	// orders service fails with support.ErrUnavailable before doing any
	// work: simulated tool faults for chaos runs. Default 0.
	ToolFaults float64 `yaml:"tool_faults"`
}

// Idempotency tunes tool-effect records.
type Idempotency struct {
	// Retention of completed records (default 15d); must exceed the DLQ's
	// max age by idempotency.RetentionSlack (1d) so a replay of the oldest
	// dead letter still finds the record and never repeats an effect.
	Retention time.Duration `yaml:"retention"`
	// Lease is how long a claim holds without renewal (default 30s, at
	// least MinIdempotencyLease).
	Lease time.Duration `yaml:"lease"`
}

// MinIdempotencyLease is the shortest idempotency.lease Validate accepts. A
// claim's lease is renewed every third of it, each renewal a round trip to
// the store, and the tool is cancelled a tenth of it before an unrenewed
// lease ends: under a second, one slow round trip cancels the tool, and
// under 3ns the renewal interval is 0, which pkg/idempotency refuses
// (idempotency.Wrap panics on it).
const MinIdempotencyLease = time.Second

// MinSessionLease is the shortest worker.session_lease Validate accepts,
// for the reason MinIdempotencyLease is: the lease is renewed while the
// invocation runs, each renewal a round trip to the store.
const MinSessionLease = time.Second

// Defaults of worker.tool_timeout and model.retry.attempt_timeout, equal to
// agent.DefaultToolTimeout and retry.DefaultAttemptTimeout (internal/app's
// tests check): written here so that this package does not import the
// model stack (the providers' SDKs start goroutines at init).
const (
	DefaultToolTimeout    = time.Minute
	DefaultAttemptTimeout = 2 * time.Minute
)

// DefaultSupportMaxModelCalls is the shipped support agent's model-call
// budget per invocation (model.max_model_calls, also used when it is 0):
// answering a billing question takes a lookup, a refund and a reply, so
// twelve calls leave room for corrections while a model that loops on its
// tools is stopped after a few cents, not after pkg/agent's
// DefaultMaxModelCalls (500).
const DefaultSupportMaxModelCalls = 12

// DefaultWorker returns the documented defaults.
func DefaultWorker() Worker {
	host, _ := os.Hostname()
	return Worker{
		Embedded: Embedded{DataDir: ".data/agentfleet", Port: DefaultEmbeddedPort},
		Redis:    Redis{Prefix: "af:", AutoPipeline: true},
		Streams: Streams{
			Requests: "AGENT_REQUESTS", Results: "AGENT_RESULTS", DLQ: "AGENT_DLQ", Consumer: "workers",
			RequestPrefix: "agent.requests", ResultPrefix: "agent.results", DLQPrefix: "agent.dlq",
			DuplicateWindow: 10 * time.Minute, ResultsMaxAge: 24 * time.Hour, DLQMaxAge: 14 * 24 * time.Hour,
			Replicas: 1, AckWait: 60 * time.Second, MaxRequestBytes: envelope.DefaultMaxSize,
		},
		Worker: Consume{
			Name: fmt.Sprintf("%s-%d", host, os.Getpid()), Concurrency: 8, MaxDeliveries: 5,
			DrainTimeout: 25 * time.Second, BusyDelay: 2 * time.Second, BusyRequeueAfter: 3, InfraBackoffMax: 30 * time.Second,
			SessionLease: 30 * time.Second, ToolTimeout: DefaultToolTimeout,
		},
		Model: Model{Spec: "sim", MaxModelCalls: DefaultSupportMaxModelCalls,
			Retry: Retry{Attempts: 2, Initial: 500 * time.Millisecond, Max: 8 * time.Second, HintCap: 30 * time.Second,
				BudgetMaxTokens: 10, BudgetTokenRatio: 0.1, AttemptTimeout: DefaultAttemptTimeout},
			Sim: Sim{Latency: 20 * time.Millisecond}},
		Idempotency: Idempotency{Retention: idempotency.DefaultRetention, Lease: 30 * time.Second},
		Cooldown:    cooldown.Config{}.WithDefaults(),
		MetricsAddr: ":9090",
		LogLevel:    "info",
	}
}

// Validate reports an inconsistent configuration with every problem listed.
func (c Worker) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.NATS.URL == "" && !c.Embedded.Enabled {
		add("nats.url is empty and embedded mode is off")
	}
	if c.NATS.URL != "" && c.Embedded.Enabled {
		// Embedded mode connects to its own server: the URL would be
		// ignored, and the worker would consume nothing from it while
		// reporting ready.
		add("nats.url (%s) is set and embedded.enabled is on: set one or the other", RedactNATSURL(c.NATS.URL))
	}
	if !c.Embedded.Enabled {
		// The embedded server is connected to without them.
		errs = append(errs, c.NATS.checkFiles()...)
	}
	errs = append(errs, checkURLs(c.NATS, c.Redis)...)
	errs = append(errs, checkRedisTLS(c.Redis)...)
	if p := c.Embedded.Port; c.Embedded.Enabled && (p < -1 || p > 65535) {
		add("embedded.port %d: want a port from 1 to 65535, 0 for the default (%d) or -1 for a free one", p, DefaultEmbeddedPort)
	}
	if c.Embedded.Enabled && c.Streams.Replicas > 1 {
		// One in-process server: JetStream refuses replicas it cannot place.
		add("streams.replicas %d needs a NATS cluster; the embedded server is a single server (use 1)", c.Streams.Replicas)
	}
	if err := CheckMetricsAddr(c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	if c.Worker.Concurrency < 1 {
		add("worker.concurrency must be at least 1")
	}
	if c.Worker.MaxDeliveries < 1 {
		add("worker.max_deliveries must be at least 1")
	}
	if c.Streams.AckWait < 3*time.Second {
		add("streams.ack_wait %v is too short for InProgress heartbeats (min 3s)", c.Streams.AckWait)
	}
	if err := idempotency.ValidateRetention(c.Idempotency.Retention, c.Streams.DLQMaxAge); err != nil {
		add("idempotency.retention: %v", err)
	}
	if p := c.Model.Sim.ToolFaults; !(p >= 0 && p <= 1) {
		add("model.sim.tool_faults %v: want a probability from 0 to 1", p)
	}
	if c.Idempotency.Lease <= 0 || c.Worker.SessionLease <= 0 {
		add("idempotency.lease and worker.session_lease must be positive")
	} else if l := c.Idempotency.Lease; l < MinIdempotencyLease {
		// Found in review, nineteenth session: 1ns and 2ns passed, and
		// idempotency.Wrap panicked on the renewal interval (lease/3 = 0).
		add("idempotency.lease %v is too short to renew: the lease is renewed every third of it, each time a round trip to the store, "+
			"and the tool is cancelled shortly before an unrenewed lease ends; want at least %v (default 30s)", l, MinIdempotencyLease)
	}
	if l := c.Worker.SessionLease; l > 0 && l < MinSessionLease {
		// Found in review, twenty-second session: 1ns passed, a lock
		// lost before the run's first step.
		add("worker.session_lease %v is too short to renew: the lock is renewed while the invocation runs, each time a round trip to the store; "+
			"want at least %v (default 30s)", l, MinSessionLease)
	}
	if c.Worker.BusyRequeueAfter == 1 {
		add("worker.busy_requeue_after 1 would requeue a busy session's message at once, without waiting worker.busy_delay (a spin): " +
			"want 2 or more (default 3), or a negative value to never requeue")
	}
	// Zero means "the default" for most of these (model.sim.latency: none),
	// but a negative value is passed on as it is: a negative busy_delay or infra_backoff_max makes
	// NakWithDelay a plain Nak (immediate redelivery, a fleet-wide spin), a
	// negative drain_timeout stops in-flight work at once on SIGTERM, and a
	// negative max_model_calls removes the call budget. streams.dlq_max_age
	// is checked with the retention above.
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"worker.drain_timeout", c.Worker.DrainTimeout},
		{"worker.busy_delay", c.Worker.BusyDelay},
		{"worker.infra_backoff_max", c.Worker.InfraBackoffMax},
		{"worker.tool_timeout", c.Worker.ToolTimeout},
		{"streams.duplicate_window", c.Streams.DuplicateWindow},
		{"streams.results_max_age", c.Streams.ResultsMaxAge},
		{"model.retry.initial", c.Model.Retry.Initial},
		{"model.retry.max", c.Model.Retry.Max},
		{"model.retry.hint_cap", c.Model.Retry.HintCap},
		{"model.retry.attempt_timeout", c.Model.Retry.AttemptTimeout},
		{"model.sim.latency", c.Model.Sim.Latency},
	} {
		if d.v < 0 {
			add("%s %v must not be negative", d.key, d.v)
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{
		{"streams.replicas", c.Streams.Replicas},
		{"streams.max_ack_pending", c.Streams.MaxAckPending},
		{"streams.max_request_bytes", c.Streams.MaxRequestBytes},
		{"model.max_model_calls", c.Model.MaxModelCalls},
		{"model.retry.attempts", c.Model.Retry.Attempts},
	} {
		if n.v < 0 {
			add("%s %d must not be negative", n.key, n.v)
		}
	}
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"model.retry.budget_max_tokens", c.Model.Retry.BudgetMaxTokens},
		{"model.retry.budget_token_ratio", c.Model.Retry.BudgetTokenRatio},
	} {
		if f.v < 0 {
			add("%s %v must not be negative", f.key, f.v)
		}
	}
	// NaN passes every comparison-based range check ("v <= 0 || v > 1"),
	// and ±Inf some: every float key is checked for them here, whatever
	// its range check says (found in review, nineteenth session: a NaN
	// cooldown.threshold silently turned the breaker off).
	errs = append(errs, nonFinite(&c)...)
	spec := c.Model.Spec
	switch {
	case spec == "sim":
	case strings.HasPrefix(spec, "gemini:") && len(spec) > len("gemini:"):
	case strings.HasPrefix(spec, "openai:") && len(spec) > len("openai:"):
	default:
		add("model.spec %q: want sim, gemini:<model> or openai:<model>", spec)
	}
	if spec != "sim" && (c.Model.Sim.Faults != "" || c.Model.Sim.ToolFaults != 0) {
		// The simulated faults exist only in the simulated provider and
		// the demo's tools: with a real model they would be ignored, and a
		// chaos run meant to inject them would silently test nothing.
		add("model.sim.faults / model.sim.tool_faults are set but model.spec is %q: simulated faults apply only to model.spec sim", spec)
	}
	if err := c.Cooldown.WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		add("log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	if len(errs) > 0 {
		return fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return nil
}

// checkURLs reports a nats.url or redis.url that can never connect (see
// CheckNATSURL and CheckRedisURL): retried as if the server were down, it
// would keep a worker from ever being ready without saying why (found in
// review, eighteenth session). Empty ones (embedded mode, the NATS KV
// stores) are not checked.
func checkURLs(n NATS, r Redis) []error {
	var errs []error
	if n.URL != "" {
		if err := CheckNATSURL(n.URL); err != nil {
			errs = append(errs, fmt.Errorf("nats.url: %w", err))
		}
	}
	if r.URL != "" {
		if err := CheckRedisURL(r.URL); err != nil {
			errs = append(errs, fmt.Errorf("redis.url: %w", err))
		}
	}
	return errs
}

// Redacted returns a copy with passwords removed from fields and URLs
// (nats.url, redis.url, model.openai_base_url, model.gemini_base_url), for
// logging.
func (c Worker) Redacted() Worker {
	if c.Redis.Password != "" {
		c.Redis.Password = "REDACTED"
	}
	c.Redis.URL = RedactURL(c.Redis.URL)
	c.NATS.URL = RedactNATSURL(c.NATS.URL)
	c.Model.OpenAIBaseURL = RedactURL(c.Model.OpenAIBaseURL)
	c.Model.GeminiBaseURL = RedactURL(c.Model.GeminiBaseURL)
	return c
}
