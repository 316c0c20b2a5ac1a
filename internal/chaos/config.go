package chaos

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ReplayMode chooses how the DLQ is replayed after the chaos phase.
type ReplayMode string

// The replay modes.
const (
	// ReplayAuto is ReplayBinary (kept as the default name).
	ReplayAuto ReplayMode = "auto"
	// ReplayBinary always uses `dlq-replayer replay`; a build failure is an
	// error.
	ReplayBinary ReplayMode = "binary"
	// ReplayOff skips the replay and the after-replay check.
	ReplayOff ReplayMode = "off"
)

// Config configures a chaos run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Invocations is the number of requests submitted (default 3000).
	Invocations int
	// Duration bounds the run once the binaries are built and the servers
	// are up (default 4m): the results must be in by 60 % of it, the replay
	// done by 90 %; whatever is missing then is reported as a violation (a
	// request without a result at the results deadline is one even when
	// the fleet restarted without faults finishes it later:
	// Report.NoResultAtDeadline).
	Duration time.Duration
	// Workers is the number of worker processes (default 3).
	Workers int
	// Concurrency is each worker's concurrency (default 32).
	Concurrency int
	// ModelFaults is the simulated provider's fault spec (default
	// "server=0.2,rate_limited=0.1,timeout=0.1": 40 % transient faults;
	// "none" for none). It also decides which failure classes an
	// invocation may end with (faultEndings): any other is a violation.
	ModelFaults string
	// ToolFaults is the share of demo orders-service calls that fail as
	// unavailable (default 0.1). Negative means none.
	ToolFaults float64
	// KillEvery is the interval between worker SIGKILLs (default 10s;
	// negative disables them).
	KillEvery time.Duration
	// MaxKills caps the SIGKILLs (0: no cap).
	MaxKills int
	// SkipRedisRestart and SkipNATSRestart turn the server restarts off.
	SkipRedisRestart bool
	SkipNATSRestart  bool // SkipNATSRestart turns the NATS server restarts off.
	// HardRestarts stops the servers with SIGKILL instead of SIGTERM.
	HardRestarts bool
	// SubmitRate is the submission rate per second (default: spread over
	// 30 % of Duration).
	SubmitRate float64
	// Seed seeds the harness's choices and the workers' fault draws
	// (default 1).
	Seed uint64
	// ModuleDir is the module root holding cmd/worker (default: found from
	// the working directory).
	ModuleDir string
	// WorkerBin and ReplayerBin, when set, are started as the worker and
	// the replayer instead of binaries built from ./cmd/worker and
	// ./cmd/dlq-replayer (a test starts its own test binary,
	// internal/testmain); WorkerEnv and ReplayerEnv are added to those
	// children's environment (e.g. testmain.Env(testmain.Worker)).
	WorkerBin   string
	ReplayerBin string   // ReplayerBin: see WorkerBin.
	WorkerEnv   []string // WorkerEnv: see WorkerBin.
	ReplayerEnv []string // ReplayerEnv: see WorkerBin.
	// WorkDir holds the binaries, server data and logs (default: a new
	// temporary directory, removed by Close unless KeepWorkDir).
	WorkDir     string
	KeepWorkDir bool // KeepWorkDir keeps WorkDir after Close.
	// NATSServer and RedisServer are the server binaries (default:
	// nats-server and redis-server on PATH, or in /usr/sbin).
	NATSServer  string
	RedisServer string // RedisServer is the redis-server binary.
	// Replay chooses the replay (default ReplayAuto).
	Replay ReplayMode
	// ReplayerArgs are appended to `dlq-replayer replay --nats-url URL
	// --redis-url URL --yes`.
	ReplayerArgs []string
	// Out receives progress lines and the report (default os.Stdout).
	Out io.Writer
}

// DefaultConfig returns the full soak's defaults.
func DefaultConfig() Config {
	return Config{
		Invocations: 3000, Duration: 4 * time.Minute, Workers: 3, Concurrency: 32,
		ModelFaults: "server=0.2,rate_limited=0.1,timeout=0.1", ToolFaults: 0.1,
		KillEvery: 10 * time.Second, Seed: 1, Replay: ReplayAuto,
	}
}

// WithDefaults returns c with zero fields set from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Invocations == 0 {
		c.Invocations = d.Invocations
	}
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Workers == 0 {
		c.Workers = d.Workers
	}
	if c.Concurrency == 0 {
		c.Concurrency = d.Concurrency
	}
	if c.ModelFaults == "" {
		c.ModelFaults = d.ModelFaults
	}
	if c.ToolFaults == 0 {
		c.ToolFaults = d.ToolFaults
	}
	if c.ToolFaults < 0 {
		c.ToolFaults = 0
	}
	if c.KillEvery == 0 {
		c.KillEvery = d.KillEvery
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.Replay == "" {
		c.Replay = d.Replay
	}
	if c.Out == nil {
		c.Out = os.Stdout
	}
	return c
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	var errs []error
	if c.Invocations < 1 {
		errs = append(errs, errors.New("invocations must be at least 1"))
	}
	if c.Duration < 20*time.Second {
		errs = append(errs, fmt.Errorf("duration %v: at least 20s", c.Duration))
	}
	if c.Workers < 1 || c.Concurrency < 1 {
		errs = append(errs, errors.New("workers and concurrency must be at least 1"))
	}
	if _, err := failureClasses(c.ModelFaults); err != nil {
		errs = append(errs, err)
	}
	if c.ToolFaults > 1 {
		errs = append(errs, fmt.Errorf("tool faults %v: want a probability from 0 to 1", c.ToolFaults))
	}
	if c.SubmitRate < 0 {
		errs = append(errs, errors.New("submit rate must not be negative"))
	}
	switch c.Replay {
	case ReplayAuto, ReplayBinary, ReplayOff:
	default:
		errs = append(errs, fmt.Errorf("replay %q: want auto, binary or off", c.Replay))
	}
	if len(errs) > 0 {
		return fmt.Errorf("chaos: config: %w", errors.Join(errs...))
	}
	return nil
}
