// Command producer submits agent requests to the fleet and awaits their
// results: "send" one request, "await" an invocation's result, and "batch"
// a JSON Lines file of requests (rate limit, concurrency, progress, a summary
// by outcome and class; re-running a file does not run what completed).
// The usage and the exit codes are documented in internal/producercli.
package main

import (
	"os"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

func main() {
	ctx, stop := shutdown.NotifyWith(os.Stderr, producercli.ForcedExitNote)
	code := producercli.Run(ctx, os.Args[1:], producercli.Env{Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
