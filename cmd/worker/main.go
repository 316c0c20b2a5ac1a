// Command worker runs agent invocations from NATS JetStream: many replicas
// share one durable consumer. With no NATS URL configured it runs an
// embedded nats-server with JetStream and NATS KV stores, so
// `go run ./cmd/worker` works on a machine with no services.
//
//	go run ./cmd/worker --demo 25                        # try it: 25 requests end to end, then exit
//	go run ./cmd/worker --demo 100 --sim-faults server=0.4   # the seed's bad morning: 40% overload
//	go run ./cmd/worker --nats-url nats://127.0.0.1:4222 --redis-url redis://127.0.0.1:6379/0
//
// Flags and configuration: see configs/worker.yaml. Exit codes: 0 clean
// stop (or demo passed), 1 error (or demo found a lost request or a
// duplicated effect), 2 bad flags or configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/config"
)

func main() {
	args, demo, err := demoFlag(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	cfg, err := config.LoadWorker(args, os.LookupEnv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "  -demo N\n    \trun N support requests end to end through an embedded worker, print a summary, exit")
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if demo > 0 {
		cfg.LogLevel = "warn"
		if _, err := app.RunDemo(ctx, cfg, demo, os.Getenv, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := app.RunWorker(ctx, cfg, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// demoFlag removes "--demo N" from args.
func demoFlag(args []string) ([]string, int, error) {
	for i, a := range args {
		name, val, hasVal := cutFlag(a)
		if name != "demo" {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, 0, errors.New("--demo needs a number")
			}
			val = args[i+1]
			args = slices.Delete(slices.Clone(args), i, i+2)
		} else {
			args = slices.Delete(slices.Clone(args), i, i+1)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			return nil, 0, fmt.Errorf("--demo %q: want a positive number", val)
		}
		return args, n, nil
	}
	return args, 0, nil
}

func cutFlag(a string) (name, val string, hasVal bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", "", false
	}
	a = a[1:]
	if a[0] == '-' {
		a = a[1:]
	}
	for i := range len(a) {
		if a[i] == '=' {
			return a[:i], a[i+1:], true
		}
	}
	return a, "", false
}
