package producercli

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/cliflag"
)

// windowLookupTimeout bounds reading the requests stream's duplicate window
// for the summary.
const windowLookupTimeout = 2 * time.Second

// runBatch is "batch --file F": submit every line of a JSON Lines file and
// print a summary by outcome and class.
func runBatch(ctx context.Context, args []string, g *globals, env Env) int {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	g.register(fs)
	var (
		file        string
		ratePerSec  float64
		concurrency int
	)
	fs.StringVar(&file, "file", "", "JSON Lines file of requests (required; - for stdin is not supported)")
	fs.Float64Var(&ratePerSec, "rate", 10, "submissions per second (0: unlimited)")
	fs.IntVar(&concurrency, "concurrency", 4, "invocations in flight at once")
	pos, err := cliflag.ParseInterspersed(fs, args)
	if err != nil {
		return usageCode(err)
	}
	if g.badTimeout(env.Stderr, "batch") {
		return ExitUsage
	}
	// NaN passed "< 0" and ran unlimited, as did +Inf (found in review,
	// twenty-fifth session): 0 is how unlimited is asked for.
	badRate := ratePerSec < 0 || math.IsNaN(ratePerSec) || math.IsInf(ratePerSec, 0)
	if file == "" || len(pos) != 0 || badRate || concurrency < 1 {
		fmt.Fprintln(env.Stderr, "producer batch: want --file F, a finite --rate >= 0, --concurrency >= 1 and no arguments")
		return ExitUsage
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer batch:", err)
		return ExitError
	}
	lines, err := ParseBatch(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer batch:", err)
		return ExitError
	}
	nc, c, err := connect(g)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer batch:", err)
		return ExitError
	}
	defer nc.Close()
	results, err := RunBatch(ctx, c, lines, BatchOptions{
		Rate: ratePerSec, Concurrency: concurrency, Timeout: g.timeout,
		Progress: NewProgress(env.Stderr, env.Terminal(env.Stderr)),
	})
	var dupWindow time.Duration
	if droppedInWindow(results) > 0 {
		// Only then does the summary name it: no look-up (and no
		// STREAM.INFO permission) needed otherwise.
		dupWindow = duplicateWindow(ctx, nc, c.Config().RequestsStream)
	}
	WriteSummaryWindow(env.Stdout, results, dupWindow)
	if err != nil {
		fmt.Fprintln(env.Stderr, "producer batch:", err)
		return ExitInterrupted
	}
	return batchExitCode(results)
}

// duplicateWindow returns the duplicate window of the stream named, as the
// server has it (streams.duplicate_window is configurable), or 0 when it
// cannot be read in windowLookupTimeout (no permission, the server gone):
// the summary then names no duration. It is read also after ctx ended (an
// interrupted batch still prints its summary).
func duplicateWindow(ctx context.Context, nc *nats.Conn, stream string) time.Duration {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), windowLookupTimeout)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0
	}
	return s.CachedInfo().Config.Duplicates
}
