// Package testmain lets a test binary stand in for the fleet's commands, so
// that process tests (SIGKILL, SIGTERM, the chaos soak) start real worker
// and replayer processes without running `go build` inside a test.
//
// A build inside a test was the slowest and most fragile step of the suite:
// on an empty build cache, beside the race build of every other package, a
// plain build of ./cmd/worker took more than five minutes on a 2-core
// machine. The test binary is already built (with -race when the suite runs
// with it, so a data race in a child is reported in its output, which the
// chaos test checks) and already holds every package the commands use.
//
// A package's TestMain calls Dispatch first:
//
//	func TestMain(m *testing.M) {
//		testmain.Dispatch()
//		os.Exit(m.Run())
//	}
//
// and a test starts a child with Executable() as the program and
// Env(Worker) (or Env(Replayer)) added to its environment; the child then
// runs that command's main with its arguments and exits instead of running
// the tests.
package testmain

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/app"
	"github.com/agentfleet/agentfleet/internal/replayer"
)

// EnvVar names the command a test binary runs as a child. It does not start
// with AGENTFLEET_, so the worker's configuration never reads it and
// harnesses that filter AGENTFLEET_* variables pass it on.
const EnvVar = "TESTMAIN_CHILD"

// Command is a command a test binary can run as a child.
type Command string

// The commands.
const (
	// Worker is cmd/worker (app.WorkerMain).
	Worker Command = "worker"
	// Replayer is cmd/dlq-replayer (replayer.Run).
	Replayer Command = "dlq-replayer"
)

// Env is the environment entry that makes a test binary run c.
func Env(c Command) string { return EnvVar + "=" + string(c) }

// Executable is the running test binary, to start as a child.
func Executable() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("testmain: %w", err)
	}
	return p, nil
}

// Dispatch runs the command EnvVar names with os.Args[1:] and exits with
// its code (2 for an unknown name). Without EnvVar it returns, so the tests
// run, unless the first argument is not a test flag: `go test` starts a
// test binary with -test.* flags only (or none), while a child started
// without EnvVar by mistake would carry its command's arguments ("--name
// w1", "replay …"), and running the suite there would start the children
// again, and so on. Such a process exits with 2 and says why.
func Dispatch() {
	name, ok := os.LookupEnv(EnvVar)
	if !ok {
		if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") {
			fmt.Fprintf(os.Stderr, "testmain: started with %q but without %s: not running the tests (set %s to %q or %q to run that command)\n",
				os.Args[1:], EnvVar, EnvVar, Worker, Replayer)
			os.Exit(2)
		}
		return
	}
	os.Exit(run(Command(name), os.Args[1:]))
}

func run(c Command, args []string) int {
	switch c {
	case Worker:
		return app.WorkerMain(args, os.Stdout, os.Stderr)
	case Replayer:
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return replayer.Run(ctx, args, replayer.Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin})
	default:
		fmt.Fprintf(os.Stderr, "testmain: %s=%q names no command (want %q or %q)\n", EnvVar, c, Worker, Replayer)
		return 2
	}
}
