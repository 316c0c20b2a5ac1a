package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"slices"
	"strconv"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

// WorkerMain is the worker command (cmd/worker) with args (without the
// program name): it loads the configuration (flags, AGENTFLEET_* variables,
// --config; an AGENTFLEET_ variable no command reads is refused when it
// misspells one, else a warning on stderr, see config.CheckEnv), runs the
// worker until SIGINT or SIGTERM, or with "--demo N" runs N support
// requests end to end and prints a summary. It returns the
// exit code: 0 clean stop (or demo passed), 1 error (or the demo found a
// lost request or a duplicated effect), 2 bad flags or configuration, 130
// a demo interrupted (Ctrl-C). Tests
// run it in their own test binary as a worker process (internal/testmain).
func WorkerMain(args []string, stdout, stderr io.Writer) int {
	args, demo, err := demoFlag(args)
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	cfg, err := config.LoadWorker(args, os.LookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "  -demo N\n    \trun N support requests end to end through a worker (embedded unless nats.url is set), print a summary, exit")
		return 0
	}
	// An AGENTFLEET_ variable that no command reads and that misspells one
	// is refused like an unknown key of the file: a typo of
	// AGENTFLEET_NATS_URL silently ran an embedded server that consumed
	// nothing from the fleet's (found in review, twentieth session). Any
	// other unknown one is a warning: the environment is not the
	// operator's alone (Kubernetes, a Helm chart).
	warnings, envErr := config.CheckEnv(os.Environ())
	for _, w := range warnings {
		fmt.Fprintln(stderr, "worker: warning:", w)
	}
	if envErr != nil {
		err = errors.Join(err, envErr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	ctx, stop := shutdown.Notify(stderr)
	defer stop()
	if demo > 0 {
		cfg.LogLevel = "warn"
		if _, err := RunDemo(ctx, cfg, demo, os.Getenv, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "worker:", err)
			if errors.Is(err, ErrBadConfig) {
				return 2
			}
			return demoExitCode(err)
		}
		return 0
	}
	if err := RunWorker(ctx, cfg, os.Getenv, stderr); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		if errors.Is(err, ErrBadConfig) {
			return 2
		}
		return 1
	}
	return 0
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
