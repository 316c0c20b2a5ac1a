// Package shutdown turns SIGINT and SIGTERM into a graceful stop for the
// commands: the first signal cancels their context (a worker stops fetching
// and finishes or hands back what it holds, a replay stops after the entry
// in hand), a second one exits at once, as an operator pressing Ctrl-C
// twice expects. Exiting at once is a crash as far as the fleet is
// concerned, and every part is built to survive one: unacknowledged
// messages are redelivered and effects are guarded by idempotency keys.
package shutdown

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// ForcedExitCode is the exit code after a second signal: 128 + SIGINT, as
// a shell reports a process that an interrupt ended.
const ForcedExitCode = 130

// WorkerForcedNote is what exiting at once leaves behind for a worker: the
// messages it held are not acknowledged, and JetStream delivers them again.
const WorkerForcedNote = "what was in hand is redelivered"

// Notify returns a context cancelled by the first SIGINT or SIGTERM; a
// second one prints a line to stderr and exits the process with
// ForcedExitCode. stop releases the signals (and lets a later signal end
// the process the default way). The line says WorkerForcedNote.
func Notify(stderr io.Writer) (ctx context.Context, stop func()) {
	return NotifyWith(stderr, WorkerForcedNote)
}

// NotifyWith is Notify whose second-signal line says forced: what exiting
// at once leaves behind, in the command's own terms (the dlq-replayer's
// second ^C spoke the worker's words; left open in the twenty-third
// session).
func NotifyWith(stderr io.Writer, forced string) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watch(ch, done, cancel, stderr, forced, os.Exit)
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// watch cancels on the first signal from ch and, saying forced, calls exit
// on the second, until done is closed.
func watch(ch <-chan os.Signal, done <-chan struct{}, cancel func(), stderr io.Writer, forced string, exit func(int)) {
	first := true
	for {
		select {
		case <-done:
			return
		case sig := <-ch:
			if first {
				first = false
				fmt.Fprintf(stderr, "%v: stopping gracefully; send it again to exit at once\n", sig)
				cancel()
				continue
			}
			fmt.Fprintf(stderr, "%v again: exiting at once (%s)\n", sig, forced)
			exit(ForcedExitCode)
			return
		}
	}
}
