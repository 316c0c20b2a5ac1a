// Command producer submits agent requests to the fleet and awaits their
// results: "send" one request, "await" an invocation's result, and "batch"
// a JSON Lines file of requests (rate limit, concurrency, progress, a summary
// by outcome and class; re-running a file does not run what completed).
// The usage and the exit codes are documented in internal/producercli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/producercli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := producercli.Run(ctx, os.Args[1:], producercli.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
