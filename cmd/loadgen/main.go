// Command loadgen is the fleet's load benchmark: it drives the fleet's
// workers (in process, or as cmd/worker processes with --processes) end to end with the support workload on the SIMULATED model
// provider and measures them against two baselines on the same servers
// (bare JetStream consume + ack, and a minimal hand-written consumer), then
// prints a table and writes the same as JSON.
//
//	go run ./cmd/loadgen --n 2000 --workers 2 --out bench.json        # NATS + Redis on localhost
//	go run ./cmd/loadgen --embedded --n 500                           # no services needed
//	go run ./cmd/loadgen --processes --workers 3 --n 3000             # the workers as processes
//	go run ./cmd/loadgen --processes --latency 200ms --inflight 4000  # one worker process, its own RSS
//	go run ./cmd/loadgen --latency 200ms --inflight 4000 --out inflight.json
//	go run ./cmd/loadgen --cpuprofile cpu.out --memprofile mem.out    # pprof of the framework phase
//
// Exit codes: 0 done; 1 an invocation of a minimal or framework phase did
// not complete (no result, or any other status: the benchmark injects no
// faults), or a refund was duplicated, lost or made by an invocation that
// did not complete (never because of a timing); 2 bad flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/loadgen"
)

func main() {
	var cfg loadgen.Config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&cfg.NATSURL, "nats-url", loadgen.DefaultNATSURL, "NATS server (JetStream)")
	fs.StringVar(&cfg.RedisURL, "redis-url", loadgen.DefaultRedisURL, "Redis server for the stores")
	fs.BoolVar(&cfg.Embedded, "embedded", false, "run an embedded NATS server and the NATS KV stores instead")
	fs.IntVar(&cfg.N, "n", 0, "invocations per phase (default 2000; 4 × inflight in the in-flight mode)")
	fs.IntVar(&cfg.Workers, "workers", loadgen.DefaultWorkers, "workers, in process or with --processes as processes (and consumers per baseline)")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultConcurrency, "invocations each worker runs at once")
	fs.IntVar(&cfg.Window, "window", 0, "requests kept in flight by the load generator (default 2 × workers × concurrency, at most 100)")
	fs.DurationVar(&cfg.Latency, "latency", 0, "simulated model latency per call")
	fs.IntVar(&cfg.Inflight, "inflight", 0, "in-flight mode: one worker with this concurrency, measured against inflight / (3 × latency)")
	fs.DurationVar(&cfg.Timeout, "timeout", loadgen.DefaultTimeout, "limit per invocation (submit → result)")
	fs.BoolVar(&cfg.SkipBaselines, "skip-baselines", false, "run the framework phase only (no bare and minimal baselines)")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "repeat the minimal and framework phases this many times, alternating, and report the median of the rounds' ratios")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the framework phase to this file")
	fs.StringVar(&cfg.MemProfile, "memprofile", "", "write a heap profile taken half-way through the framework phase to this file")
	fs.StringVar(&cfg.MinimalCPUProfile, "minimal-cpuprofile", "", "write a CPU profile of the minimal phase to this file (to compare with --cpuprofile's)")
	fs.StringVar(&cfg.Out, "out", "", "write the report as JSON to this file")
	fs.BoolVar(&cfg.Processes, "processes", false, "run the framework's workers as cmd/worker processes (built from this module unless --worker-bin is given) instead of in this process")
	fs.StringVar(&cfg.WorkerBin, "worker-bin", "", "worker program for --processes (default: go build ./cmd/worker into a temporary directory)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "loadgen: unexpected arguments %v\n", fs.Args())
		os.Exit(2)
	}
	if err := cfg.WithDefaults().Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if _, err := loadgen.Run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "loadgen:") {
			msg = "loadgen: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}
