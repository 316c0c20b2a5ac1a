// Command chaos runs the fleet's chaos soak (make chaos): its own
// nats-server and redis-server on loopback ports, worker processes with
// simulated model and tool faults, a worker SIGKILLed every ~10 s, Redis and
// NATS restarted once each, then a DLQ replay with faults off and the
// invariant checker (lost = 0 with every result in by 60 % of --duration,
// duplicated effects = 0, failure classes only those the faults produce,
// every transient entry completed after the replay). See internal/chaos.
//
//	go run ./cmd/chaos                       # the full soak: 3000 invocations, bounded by 4m
//	go run ./cmd/chaos --n 600 --duration 3m # the CI size
//
// Exit codes: 0 every invariant held, 1 a violation (the table says which)
// or the harness failed, 2 bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/chaos"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	d := chaos.DefaultConfig()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	n := fs.Int("n", d.Invocations, "invocations to submit")
	duration := fs.Duration("duration", d.Duration, "bound of the run after the build (results by 60 %, replay by 90 %)")
	workers := fs.Int("workers", d.Workers, "worker processes")
	concurrency := fs.Int("concurrency", d.Concurrency, "invocations at once per worker")
	modelFaults := fs.String("model-faults", d.ModelFaults, "simulated provider faults (pkg/providers/sim spec)")
	toolFaults := fs.Float64("tool-faults", d.ToolFaults, "share of orders-service calls that fail as unavailable (0 for none)")
	killEvery := fs.Duration("kill-every", d.KillEvery, "interval between worker SIGKILLs (0 for none)")
	maxKills := fs.Int("max-kills", 0, "cap on worker SIGKILLs (0: no cap)")
	noRedis := fs.Bool("no-redis-restart", false, "do not restart Redis")
	noNATS := fs.Bool("no-nats-restart", false, "do not restart NATS")
	hard := fs.Bool("hard-restarts", false, "stop the servers with SIGKILL instead of SIGTERM")
	rate := fs.Float64("rate", 0, "submissions per second (0: spread over 30 % of --duration)")
	seed := fs.Uint64("seed", d.Seed, "seed of the harness's choices and the workers' fault draws")
	replay := fs.String("replay", string(d.Replay), "auto (= binary) | binary | off")
	replayerArgs := fs.String("replayer-args", "", "extra arguments for `dlq-replayer replay`, space separated")
	keep := fs.Bool("keep", false, "keep the work directory (binaries, server data, logs)")
	natsServer := fs.String("nats-server", "", "nats-server binary (default: PATH, /usr/sbin)")
	redisServer := fs.String("redis-server", "", "redis-server binary (default: PATH)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "chaos: unexpected arguments %v\n", fs.Args())
		return 2
	}
	cfg := chaos.Config{
		Invocations: *n, Duration: *duration, Workers: *workers, Concurrency: *concurrency,
		ModelFaults: *modelFaults, ToolFaults: *toolFaults, KillEvery: *killEvery, MaxKills: *maxKills,
		SkipRedisRestart: *noRedis, SkipNATSRestart: *noNATS, HardRestarts: *hard, SubmitRate: *rate,
		Seed: *seed, Replay: chaos.ReplayMode(*replay), ReplayerArgs: strings.Fields(*replayerArgs),
		KeepWorkDir: *keep, NATSServer: *natsServer, RedisServer: *redisServer, Out: os.Stdout,
	}
	if *toolFaults == 0 {
		cfg.ToolFaults = -1 // zero means the default in Config
	}
	if *killEvery == 0 {
		cfg.KillEvery = -1
	}
	if *modelFaults == "" {
		cfg.ModelFaults = "none"
	}
	h, err := chaos.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	defer h.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := h.Run(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		fmt.Fprintln(os.Stderr, "chaos: logs in", h.LogDir(), "(kept with --keep)")
		return 1
	}
	rep.Print(os.Stdout)
	if *keep {
		fmt.Println("work directory (binaries, server data, logs):", h.WorkDir())
	}
	if !rep.OK() {
		return 1
	}
	return 0
}
