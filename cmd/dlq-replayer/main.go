// Command dlq-replayer is the on-call tool for the dead-letter stream: stats,
// list, show an invocation (its session events and the tool effects already
// done), replay safely (dry run, canary, auto-halt, cooldown pause,
// confirmation, parking), park, purge, and a long-running drain mode with
// metrics and health endpoints. Usage, semantics and exit codes are
// documented in internal/replayer; the 3 a.m. path is docs/runbook.md.
//
//	dlq-replayer stats
//	dlq-replayer replay --dry-run
//	dlq-replayer replay --canary 5 --yes
package main

import (
	"os"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/shutdown"
)

func main() {
	ctx, stop := shutdown.NotifyWith(os.Stderr, replayer.ForcedExitNote)
	code := replayer.Run(ctx, os.Args[1:], replayer.Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin})
	stop()
	os.Exit(code)
}
