// Package testmain lets a test binary stand in for the fleet's commands, so
// that process tests (SIGKILL, SIGTERM, the chaos soak) start real worker
// and replayer processes without running `go build` inside a test.
//
// A build inside a test was the slowest and most fragile step of the suite:
// on an empty build cache, beside the race build of every other package, a
// plain build of ./cmd/worker took more than five minutes on a 2-core
// machine. The test binary is already built (with -race when the suite runs
// with it, so the children are race-checked too) and already holds every
// package the commands use.
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

// Dispatch returns at once unless EnvVar names a command; then it runs that
// command with os.Args[1:] and exits with its code. An unknown name exits
// with 2.
func Dispatch() {
	name, ok := os.LookupEnv(EnvVar)
	if !ok {
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
