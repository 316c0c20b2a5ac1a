package loadgen

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
)

// Default values of Config.
const (
	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
	DefaultN           = 2000
	DefaultWorkers     = 2
	DefaultConcurrency = 16
	// DefaultTimeout bounds one invocation (submit → result).
	DefaultTimeout = 2 * time.Minute
)

// Config is one benchmark run.
type Config struct {
	// NATSURL and RedisURL are the servers (ignored when Embedded).
	NATSURL  string
	RedisURL string // RedisURL is the Redis server URL.
	// Embedded runs an in-process nats-server; the fleet then uses the NATS
	// KV stores and the minimal baseline NATS KV too (no Redis).
	Embedded bool
	// N is the number of invocations per phase.
	N int
	// Workers is the number of workers (app.StartWorker each in process,
	// or cmd/worker processes with Processes), and of consumers in the
	// baselines.
	Workers int
	// Concurrency is each worker's (and baseline consumer's) concurrency.
	Concurrency int
	// Window is the number of requests the load generator keeps in flight
	// (closed loop). Default 2 × Workers × Concurrency, at most 100 so that
	// every in-flight invocation refunds an order of its own (the demo
	// catalogue has 100 orders).
	Window int
	// Latency is the simulated model latency per call (0 in the throughput
	// mode: the run measures the framework's own cost).
	Latency time.Duration
	// Inflight > 0 selects the in-flight mode: one worker (and one
	// baseline consumer) with concurrency Inflight, a window of Inflight,
	// measured against the Little's-law bound Inflight / (3 × Latency).
	Inflight int
	// Timeout bounds one invocation.
	Timeout time.Duration
	// SkipBaselines runs the framework phase only.
	SkipBaselines bool
	// Rounds repeats the minimal and framework phases, alternating
	// (minimal, framework, minimal_r2, framework_r2, …), and reports the
	// median of the rounds' framework/minimal ratios: on a shared machine
	// adjacent phases drift less than whole runs. Default 1.
	Rounds int
	// CPUProfile and MemProfile, when set, are written for the framework
	// phase only (pprof format).
	CPUProfile string
	MemProfile string // MemProfile is the heap profile's output file.
	// MinimalCPUProfile, when set, receives a CPU profile of the (first)
	// minimal phase, taken as CPUProfile's is: the same part of the run in
	// the same process, so the two can be compared function by function.
	MinimalCPUProfile string
	// Out, when set, receives the report as JSON.
	Out string
	// Processes runs the framework phase's workers as cmd/worker
	// processes, each with the configuration an in-process worker would
	// get (written as YAML, passed with --config); the baselines stay in
	// this process. Their CPU and peak RSS are added to the phase's; their
	// heap allocations are not counted. With Inflight the one worker is a
	// process: its in-flight gauge is read from its /metrics, and the RSS
	// goal is its own peak, without the load generator's.
	Processes bool
	// WorkerBin is the worker program for Processes (default: ./cmd/worker
	// of ModuleDir, built into a temporary directory with the go command).
	WorkerBin string
	// ModuleDir is the module that holds cmd/worker (default: the go.mod
	// at or above the working directory).
	ModuleDir string
	// WorkerEnv is added to each worker process's environment (which is
	// this process's minus every AGENTFLEET_* variable).
	WorkerEnv []string

	workerBin string // the program Run resolved for Processes
}

// WithDefaults returns c with zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.NATSURL == "" {
		c.NATSURL = DefaultNATSURL
	}
	if c.RedisURL == "" {
		c.RedisURL = DefaultRedisURL
	}
	if c.Inflight > 0 {
		c.Workers, c.Concurrency = 1, c.Inflight
		if c.Window == 0 {
			c.Window = c.Inflight
		}
		if c.N == 0 {
			c.N = 4 * c.Inflight
		}
	}
	if c.N == 0 {
		c.N = DefaultN
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Window == 0 {
		c.Window = min(max(2*c.Workers*c.Concurrency, 1), maxOrders)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	return c
}

// Validate reports unusable settings, among them a NATS or Redis URL that
// can never connect (unless Embedded, which ignores them): cmd/loadgen
// exits 2 on them, as on a bad flag. The errors print the URLs redacted.
func (c Config) Validate() error {
	var errs []error
	if !c.Embedded {
		if err := config.CheckNATSURL(c.NATSURL); err != nil {
			errs = append(errs, fmt.Errorf("loadgen: --nats-url: %w", err))
		}
		if err := config.CheckRedisURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Errorf("loadgen: --redis-url: %w", err))
		}
	}
	if c.N < 1 || c.Workers < 1 || c.Concurrency < 1 || c.Window < 1 {
		errs = append(errs, errors.New("loadgen: n, workers, concurrency and window must be at least 1"))
	}
	if c.Rounds < 1 {
		errs = append(errs, errors.New("loadgen: rounds must be at least 1"))
	}
	if c.Latency < 0 || c.Timeout <= 0 {
		errs = append(errs, errors.New("loadgen: latency must not be negative and timeout must be positive"))
	}
	if c.MinimalCPUProfile != "" && c.SkipBaselines {
		errs = append(errs, errors.New("loadgen: --minimal-cpuprofile needs the minimal phase: drop --skip-baselines"))
	}
	if c.Inflight > 0 && c.Latency <= 0 {
		errs = append(errs, fmt.Errorf("loadgen: --inflight %d needs a model --latency (the Little's-law bound is inflight / (3 × latency))", c.Inflight))
	}
	return errors.Join(errs...)
}
