package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/cooldown"
	"github.com/agentfleet/agentfleet/pkg/idempotency"
)

// DefaultReplayerNATSURL is the dlq-replayer's default NATS URL (a fleet
// server on this machine). The replayer never runs an embedded server.
const DefaultReplayerNATSURL = "nats://127.0.0.1:4222"

// ReplayerConfigEnv names the environment variable holding the path of the
// replayer's YAML file when --config is not given. It is not
// AGENTFLEET_CONFIG so that a worker's file is never read by mistake.
const ReplayerConfigEnv = EnvPrefix + "REPLAYER_CONFIG"

// Replayer is the dlq-replayer's configuration. The yaml tags are the keys
// of configs/dlq-replayer.yaml. NATS, Redis, Streams, Cooldown and
// Idempotency are the worker's sections and must match the fleet's.
type Replayer struct {
	// NATS is how to reach the fleet's NATS server.
	NATS NATS `yaml:"nats"`
	// Redis holds the fleet's sessions, idempotency records and cooldown.
	// An empty URL means the NATS KV stores (the cooldown is then not
	// visible to the replayer: see docs/runbook.md).
	Redis Redis `yaml:"redis"`
	// Streams names the fleet's streams (the same keys as the worker's).
	Streams Streams `yaml:"streams"`
	// Cooldown must match the fleet's (the Redis key layout depends on it).
	Cooldown cooldown.Config `yaml:"cooldown"`
	// Idempotency must match the fleet's (NATS KV bucket settings).
	Idempotency Idempotency `yaml:"idempotency"`
	// Replay tunes the replay, park and purge commands.
	Replay Replay `yaml:"replay"`
	// Drain tunes the long-running drain mode.
	Drain Drain `yaml:"drain"`
	// MetricsAddr serves /metrics, /healthz and /readyz in drain mode (""
	// disables).
	MetricsAddr string `yaml:"metrics_addr"`
	// LogLevel is debug, info, warn or error (the drain mode's JSON log).
	LogLevel string `yaml:"log_level"`
}

// Replay tunes replays.
type Replay struct {
	// Consumer is the durable pull consumer of the DLQ stream kept for the
	// replayer (default dlq-replayer).
	Consumer string `yaml:"consumer"`
	// ParkedStream holds parked entries (default AGENT_DLQ_PARKED).
	ParkedStream string `yaml:"parked_stream"`
	// ParkedPrefix is the parked subjects' prefix: entries go to
	// <prefix>.<class>.<agent> (default agent.dlq.parked; five tokens, so
	// they never match the DLQ stream's agent.dlq.*.*).
	ParkedPrefix string `yaml:"parked_prefix"`
	// ParkedMaxAge is how long parked entries are kept (default 14 days).
	ParkedMaxAge time.Duration `yaml:"parked_max_age"`
	// MaxReplays: an entry already replayed this many times is parked
	// instead of replayed again (default 3).
	MaxReplays int `yaml:"max_replays"`
	// ConfirmAbove: a real replay or purge of more entries asks for
	// confirmation on a terminal or needs --yes (default 100).
	ConfirmAbove int `yaml:"confirm_above"`
	// Rate is the default --rate, replays per second (default 50; 0 =
	// unthrottled).
	Rate float64 `yaml:"rate"`
	// Concurrency is the default --concurrency (default 8).
	Concurrency int `yaml:"concurrency"`
	// HaltRatio: halt when this share of the replays' results come back
	// dead_lettered or failed (default 0.5) ...
	HaltRatio float64 `yaml:"halt_ratio"`
	// HaltMinResults ... once at least this many results arrived (default
	// 10).
	HaltMinResults int `yaml:"halt_min_results"`
	// ResultTimeout bounds the wait for a replay's result (--canary,
	// --wait; default 2m).
	ResultTimeout time.Duration `yaml:"result_timeout"`
	// CooldownPoll is how often an open cooldown is checked again while a
	// replay is paused (default 1s).
	CooldownPoll time.Duration `yaml:"cooldown_poll"`
}

// Drain tunes the drain mode.
type Drain struct {
	// Rate is replays per second (default 10).
	Rate float64 `yaml:"rate"`
	// Concurrency is replays in flight at once (default 4).
	Concurrency int `yaml:"concurrency"`
	// Interval is the pause between two passes over the DLQ (default 10s).
	Interval time.Duration `yaml:"interval"`
	// HaltBackoff is how long drain waits after a safety halt (too many
	// replays dead-lettered again) before it tries again (default 5m).
	HaltBackoff time.Duration `yaml:"halt_backoff"`
}

// DefaultReplayer returns the documented defaults (configs/dlq-replayer.yaml).
func DefaultReplayer() Replayer {
	w := DefaultWorker()
	return Replayer{
		NATS:        NATS{URL: DefaultReplayerNATSURL},
		Redis:       w.Redis,
		Streams:     w.Streams,
		Cooldown:    w.Cooldown,
		Idempotency: w.Idempotency,
		Replay: Replay{
			Consumer: "dlq-replayer", ParkedStream: "AGENT_DLQ_PARKED", ParkedPrefix: "agent.dlq.parked",
			ParkedMaxAge: 14 * 24 * time.Hour, MaxReplays: 3, ConfirmAbove: 100, Rate: 50, Concurrency: 8,
			HaltRatio: 0.5, HaltMinResults: 10, ResultTimeout: 2 * time.Minute, CooldownPoll: time.Second,
		},
		Drain:       Drain{Rate: 10, Concurrency: 4, Interval: 10 * time.Second, HaltBackoff: 5 * time.Minute},
		MetricsAddr: ":9091",
		LogLevel:    "info",
	}
}

// LoadReplayer builds the replayer's configuration from the defaults, the
// YAML file at path (or $AGENTFLEET_REPLAYER_CONFIG when path is empty) and
// the AGENTFLEET_* variables, in that order. Command-line flags are applied
// by the caller, which then calls Validate.
func LoadReplayer(path string, lookup func(string) (string, bool)) (Replayer, error) {
	c := DefaultReplayer()
	if path == "" {
		if p, ok := lookup(ReplayerConfigEnv); ok {
			path = p
		}
	}
	if path != "" {
		if err := LoadFile(path, &c); err != nil {
			return c, err
		}
	}
	if _, err := ApplyEnv(&c, lookup); err != nil {
		return c, err
	}
	return c, nil
}

// Validate reports an unusable configuration with every problem listed.
func (c Replayer) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.NATS.URL == "" {
		add("nats.url is empty")
	}
	errs = append(errs, c.NATS.checkFiles()...)
	// As for the worker (found in review, eighteenth session).
	errs = append(errs, checkURLs(c.NATS, c.Redis)...)
	errs = append(errs, checkRedisTLS(c.Redis)...)
	// drain serves on it: a malformed one failed in net.Listen after
	// connecting to everything, exit 1, not 3 (found in review, twentieth
	// session).
	if err := CheckMetricsAddr(c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	r := c.Replay
	if r.Consumer == "" || r.ParkedStream == "" || r.ParkedPrefix == "" {
		add("replay.consumer, replay.parked_stream and replay.parked_prefix must be set")
	}
	if r.MaxReplays < 1 {
		add("replay.max_replays must be at least 1")
	}
	// A negative age or count is passed on as it is (a stream's max age
	// below zero is refused by the server only when the stream is made).
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"replay.parked_max_age", r.ParkedMaxAge},
		{"streams.duplicate_window", c.Streams.DuplicateWindow},
		{"streams.results_max_age", c.Streams.ResultsMaxAge},
	} {
		if d.v < 0 {
			add("%s %v must not be negative", d.key, d.v)
		}
	}
	if c.Streams.Replicas < 0 {
		add("streams.replicas %d must not be negative", c.Streams.Replicas)
	}
	if r.ConfirmAbove < 0 {
		add("replay.confirm_above must not be negative")
	}
	// NaN and ±Inf are refused by nonFinite below: a NaN rate read as
	// unthrottled, a NaN halt_ratio never halted.
	if r.Rate < 0 || c.Drain.Rate < 0 {
		add("replay.rate and drain.rate must not be negative")
	}
	if r.Concurrency < 1 || c.Drain.Concurrency < 1 {
		add("replay.concurrency and drain.concurrency must be at least 1")
	}
	if !(r.HaltRatio > 0 && r.HaltRatio <= 1) {
		add("replay.halt_ratio must be in (0, 1]")
	}
	if r.HaltMinResults < 1 {
		add("replay.halt_min_results must be at least 1")
	}
	if r.ResultTimeout <= 0 || r.CooldownPoll <= 0 || c.Drain.Interval <= 0 || c.Drain.HaltBackoff <= 0 {
		add("replay.result_timeout, replay.cooldown_poll, drain.interval and drain.halt_backoff must be positive")
	}
	if err := idempotency.ValidateRetention(c.Idempotency.Retention, c.Streams.DLQMaxAge); err != nil {
		add("idempotency.retention: %v", err)
	}
	errs = append(errs, nonFinite(&c)...)
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

// Worker returns a worker configuration carrying the replayer's shared
// sections, for the internal/app helpers that take one (connections,
// stores). Embedded mode is off.
func (c Replayer) Worker() Worker {
	w := DefaultWorker()
	w.NATS, w.Redis, w.Streams, w.Cooldown, w.Idempotency = c.NATS, c.Redis, c.Streams, c.Cooldown, c.Idempotency
	w.Embedded.Enabled = false
	w.Worker.Name = "dlq-replayer"
	w.MetricsAddr, w.LogLevel = c.MetricsAddr, c.LogLevel
	return w
}

// Redacted returns a copy with passwords removed, for logging.
func (c Replayer) Redacted() Replayer {
	if c.Redis.Password != "" {
		c.Redis.Password = "REDACTED"
	}
	c.Redis.URL = RedactURL(c.Redis.URL)
	c.NATS.URL = RedactNATSURL(c.NATS.URL)
	return c
}
