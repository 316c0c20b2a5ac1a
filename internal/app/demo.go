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
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// DemoReport is what a demo run found.
type DemoReport struct {
	Requests   int            // Requests is the number of requests sent.
	ByOutcome  map[string]int // "status class" → count
	Lost       int            // requests without a result
	Refunds    int            // executed refund records
	Duplicates int            // (invocation, order) pairs refunded more than once
	Elapsed    time.Duration  // Elapsed is the run's wall-clock duration.
}

// RunDemo starts a worker (embedded unless a NATS URL is configured),
// submits n support requests through the producer client, waits for every
// result, and prints a summary by outcome and class, the refunds executed
// and any duplicated effect. It returns an error if a request got no result
// or an effect was duplicated.
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
		return nil, err
	}
	defer func() { stopWorker(); _ = r.Wait() }()

	sc := r.Infra.Streams
	cl, err := client.New(r.Infra.JS, r.Infra.NC, client.Config{
		RequestsStream: sc.RequestsStream, ResultsStream: sc.ResultsStream,
		RequestPrefix: sc.RequestPrefix, ResultPrefix: sc.ResultPrefix,
	})
	if err != nil {
		return nil, err
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
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
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

	refunds, err := r.Infra.Stores.Refunds(ctx)
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
	}
	return rep, nil
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
	_ = tw.Flush()
	fmt.Fprintf(out, "\nrefunds executed: %d   duplicated effects: %d   elapsed: %s\n", rep.Refunds, rep.Duplicates, rep.Elapsed.Round(time.Millisecond))
}
