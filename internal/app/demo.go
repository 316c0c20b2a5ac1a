package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/internal/config"
	"github.com/agentfleet/agentfleet/internal/shutdown"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// DemoReport is what a demo run found.
type DemoReport struct {
	Requests   int            // Requests is the number of requests the run was asked for.
	ByOutcome  map[string]int // "status class" → count
	Lost       int            // requests without a result (not counting Unfinished)
	Refunds    int            // executed refund records
	Duplicates int            // (invocation, order) pairs refunded more than once
	Elapsed    time.Duration  // Elapsed is the run's wall-clock duration.
	// Interrupted says the run's context ended (Ctrl-C) before every
	// request had a result, and Unfinished counts the requests that had
	// none because of it (cut short while awaited, or never sent). They
	// are not counted as lost: the run stopped, the fleet lost nothing
	// (with an external NATS server a request sent stays in the requests
	// stream, the worker hands back what it holds when it stops; an
	// embedded server's streams go with its temporary directory).
	Interrupted bool
	Unfinished  int // Unfinished: see Interrupted.
}

// ErrDemoInterrupted is returned (wrapped) by RunDemo when its context
// ended before every request had a result and nothing else went wrong:
// the run stopped early, it found no lost request. WorkerMain exits
// shutdown.ForcedExitCode (130, as a shell reports an interrupted
// command) on it.
var ErrDemoInterrupted = errors.New("interrupted")

// refundsReadTimeout bounds the read of the refunds at the end of a demo,
// which does not end with the run's context: an interrupted run still
// checks what it did for duplicated effects.
const refundsReadTimeout = 30 * time.Second

// RunDemo starts a worker (embedded unless a NATS URL is configured),
// submits n support requests through the producer client, waits for every
// result, and prints a summary by outcome and class, the refunds executed
// and any duplicated effect. It returns an error if a request got no result
// or an effect was duplicated. When ctx ends first (Ctrl-C) it stops
// submitting, does not count the requests cut short as lost, still checks
// the refunds made so far, and returns ErrDemoInterrupted (unless it found
// a lost request or a duplicated effect); when ctx ends before the worker
// is up (waiting for NATS), the error matches ErrDemoInterrupted too.
func RunDemo(ctx context.Context, cfg config.Worker, n int, getenv func(string) string, out, logOut io.Writer) (*DemoReport, error) {
	if cfg.Embedded.Enabled {
		dir, err := os.MkdirTemp("", "agentfleet-demo-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Embedded.DataDir, cfg.Embedded.Port = dir, -1
	}
	cfg.MetricsAddr = ""
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	r, err := StartWorker(wctx, cfg, getenv, logOut)
	if err != nil {
		return nil, interruptedBeforeRequests(ctx, err)
	}
	defer func() { stopWorker(); _ = r.Wait() }()

	sc := r.Infra.Streams
	cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		return nil, interruptedBeforeRequests(ctx, err)
	}
	if cfg.Model.Spec == "sim" {
		fmt.Fprintf(out, "agentfleet demo: %d support requests, SIMULATED model provider (faults: %q, SIMULATED tool faults: %v), stores: %s\n",
			n, cfg.Model.Sim.Faults, cfg.Model.Sim.ToolFaults, r.Infra.Stores.Mode)
	} else {
		fmt.Fprintf(out, "agentfleet demo: %d support requests, model %s, stores: %s\n", n, cfg.Model.Spec, r.Infra.Stores.Mode)
	}

	rep := &DemoReport{Requests: n, ByOutcome: map[string]int{}}
	start := time.Now()
	run := fmt.Sprintf("%x", time.Now().UnixNano())
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
submit:
	for i := range n {
		// Stop submitting once ctx ends (found in review, twentieth
		// session: the loop sent every request after a Ctrl-C).
		select {
		case <-ctx.Done():
			break submit
		case sem <- struct{}{}:
		}
		if ctx.Err() != nil {
			<-sem
			break submit
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			order := fmt.Sprintf("A-%d", 1001+i%100)
			req := &envelope.Request{
				InvocationID: fmt.Sprintf("demo-%s-%d", run, i), Agent: SupportAgentName,
				UserID: fmt.Sprintf("user-%d", i), SessionID: fmt.Sprintf("session-%s-%d", run, i),
				Message: model.NewTextContent(model.RoleUser, "Please refund order "+order+", it arrived damaged."),
			}
			actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			res, err := cl.SubmitAndAwait(actx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ctx.Err() != nil {
					return // cut short by the interrupt: Unfinished, not lost
				}
				rep.Lost++
				fmt.Fprintf(out, "  %s: no result: %v\n", req.InvocationID, err)
				return
			}
			key := string(res.Status)
			if res.ErrorClass != "" {
				key += " " + res.ErrorClass
			}
			rep.ByOutcome[key]++
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	done := 0
	for _, c := range rep.ByOutcome {
		done += c
	}
	if ctx.Err() != nil && done+rep.Lost < n {
		rep.Interrupted, rep.Unfinished = true, n-done-rep.Lost
	}

	// Not with ctx: after a Ctrl-C the refunds made so far are still
	// checked for duplicated effects (found in review, twentieth session:
	// the read failed with "context canceled").
	rctx, cancelRead := context.WithTimeout(context.WithoutCancel(ctx), refundsReadTimeout)
	defer cancelRead()
	refunds, err := r.Infra.Stores.Refunds(rctx)
	if err != nil {
		return rep, fmt.Errorf("demo: read refunds: %w", err)
	}
	seen := map[string]int{}
	for _, rf := range refunds {
		if !strings.HasPrefix(rf.InvocationID, "demo-"+run+"-") {
			continue // an earlier run against the same Redis
		}
		rep.Refunds++
		seen[rf.InvocationID+"|"+rf.OrderID]++
	}
	for _, c := range seen {
		if c > 1 {
			rep.Duplicates++
		}
	}
	printDemo(out, rep)
	switch {
	case rep.Lost > 0:
		return rep, fmt.Errorf("demo: %d requests got no result", rep.Lost)
	case rep.Duplicates > 0:
		return rep, errors.New("demo: an effect was duplicated")
	case rep.Interrupted:
		return rep, fmt.Errorf("demo: %w: %d of %d requests done, %d not finished", ErrDemoInterrupted, done, n, rep.Unfinished)
	}
	return rep, nil
}

// interruptedBeforeRequests is RunDemo's error for err, a failure before
// the first request: wrapped with ErrDemoInterrupted too when ctx ended
// (Ctrl-C while the worker waited for NATS, "NATS not reachable;
// retrying", ended with "context canceled" and exit 1, the code of a demo
// that found a lost request; found in review, twentieth session). A bad
// configuration (ErrBadConfig) still exits 2.
func interruptedBeforeRequests(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("demo: %w before the first request: %w", ErrDemoInterrupted, err)
}

// demoExitCode is WorkerMain's exit code for RunDemo's error err: 2 bad
// configuration, shutdown.ForcedExitCode an interrupted run
// (ErrDemoInterrupted), 1 anything else (a lost request, a duplicated
// effect, a failure).
func demoExitCode(err error) int {
	switch {
	case errors.Is(err, ErrBadConfig):
		return 2
	case errors.Is(err, ErrDemoInterrupted):
		return shutdown.ForcedExitCode
	}
	return 1
}

func printDemo(out io.Writer, rep *DemoReport) {
	keys := make([]string, 0, len(rep.ByOutcome))
	for k := range rep.ByOutcome {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\noutcome\tclass\tcount")
	for _, k := range keys {
		status, class, _ := strings.Cut(k, " ")
		if class == "" {
			class = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", status, class, rep.ByOutcome[k])
	}
	fmt.Fprintf(tw, "lost (no result)\t\t%d\n", rep.Lost)
	if rep.Interrupted {
		fmt.Fprintf(tw, "not finished (interrupted)\t\t%d\n", rep.Unfinished)
	}
	_ = tw.Flush()
	if rep.Interrupted {
		fmt.Fprintf(out, "\ninterrupted: %d of %d done, %d not finished (cut short by the interrupt, not counted as lost)\n", rep.Requests-rep.Unfinished-rep.Lost, rep.Requests, rep.Unfinished)
	}
	fmt.Fprintf(out, "\nrefunds executed: %d   duplicated effects: %d   elapsed: %s\n", rep.Refunds, rep.Duplicates, rep.Elapsed.Round(time.Millisecond))
}
