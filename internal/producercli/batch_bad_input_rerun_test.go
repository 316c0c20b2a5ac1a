package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review, eighteenth session): a batch run before its agent was deployed: the (real) worker refuses
// every line as BAD_INPUT ("unknown agent"), publishes a failed result and
// writes no invocation record (internal/worker: badInput runs before the
// session gate). The runbook's remedy for bad input is "fix it, and purge
// them; the producer sends them again" (docs/runbook.md, Bad input). But
// `producer batch` never sends such a line again: its rerun finds the
// stored failed result, reports it "failed" (Earlier) without submitting,
// and tells the user to replay it from the DLQ ("the worker does not rerun
// a finished invocation for a resubmission"), which is not true for a
// BAD_INPUT line (no record: the worker runs a resubmission) and which the
// replayer refuses for BAD_INPUT without --force. The line stays failed on
// every rerun until its result ages out of AGENT_RESULTS (24h).
func TestBatchRerunSendsALineRefusedAsBadInputAgain(t *testing.T) {
	// A short duplicate window stands for "ten minutes later".
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sc, c, lines, startWorker := badInputBatch(t, ctx, 200*time.Millisecond)
	opts := producercli.BatchOptions{Concurrency: 1, Timeout: 15 * time.Second}

	// The fleet does not run "billing" yet.
	stop := startWorker("support")
	first, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Outcome != producercli.OutcomeFailed || first[0].Class != "BAD_INPUT" {
		t.Fatalf("test premise: first run %+v, want failed BAD_INPUT", first[0])
	}
	stop()

	// "billing" is deployed; the duplicate window has passed; the file is
	// run again, as the runbook says the producer will.
	startWorker("support", "billing")
	outliveDuplicateWindow(sc)
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	producercli.WriteSummary(&summary, second)
	if r := second[0]; r.Outcome != producercli.OutcomeCompleted {
		t.Fatalf("rerun after the agent was deployed: line outcome %q %s (submitted %v, earlier %v); want completed: a BAD_INPUT line has no invocation record, the worker runs it when sent again, and the runbook says the producer sends it again. Summary:\n%s",
			r.Outcome, r.Class, r.Submitted, r.Earlier, summary.String())
	}
}

// A BAD_INPUT line sent again while the requests stream still holds the
// first request in its duplicate window is dropped by the server: no new
// result comes, so the rerun reports the stored refusal at once (not a
// timeout) and the summary says to wait the window out.
func TestBatchRerunInsideTheDuplicateWindowSaysToWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, c, lines, startWorker := badInputBatch(t, ctx, time.Hour)
	opts := producercli.BatchOptions{Concurrency: 1, Timeout: 30 * time.Second}
	stop := startWorker("support")
	if first, err := producercli.RunBatch(ctx, c, lines, opts); err != nil || first[0].Class != "BAD_INPUT" {
		t.Fatalf("test premise: first run %+v, %v; want failed BAD_INPUT", first, err)
	}
	stop()
	startWorker("support", "billing")
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := second[0]
	if r.Outcome != producercli.OutcomeFailed || r.Class != "BAD_INPUT" || !r.Duplicate || !r.Earlier {
		t.Fatalf("rerun inside the window: %+v; want the stored BAD_INPUT refusal, sent again as a duplicate", r)
	}
	var summary bytes.Buffer
	producercli.WriteSummary(&summary, second)
	if !strings.Contains(summary.String(), "duplicate window") || strings.Contains(summary.String(), "replay them from the DLQ") {
		t.Fatalf("summary does not tell to wait the duplicate window out:\n%s", summary.String())
	}
}

// badInputBatch is a real worker over embedded NATS (memory stores, a
// one-line model) and a one-line batch for the agent "billing", which the
// worker runs only when startWorker is given it.
func badInputBatch(t *testing.T, ctx context.Context, dupWindow time.Duration) (streams.Config, *client.Client, []producercli.Line, func(agents ...string) context.CancelFunc) {
	t.Helper()
	done := model.Func{ModelName: "test", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) { yield(agenttest.Text("done"), nil) }
	}}
	f := newBadInputFleet(t, ctx, dupWindow, done)
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"ticket-7","agent":"billing","user_id":"u1","session_id":"s1","text":"Why was I charged twice?"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	return f.sc, f.client(), lines, f.startWorker
}

// badInputFleet is embedded NATS with the fleet's streams and real workers
// over memory stores they share, each running the agents it is started
// with (so a request for another agent is refused as BAD_INPUT), all
// answering with one model.
type badInputFleet struct {
	t   *testing.T
	js  jetstream.JetStream
	nc  *nats.Conn
	srv *server.Server
	sc  streams.Config

	m        model.Model
	sessions *session.Memory
	locker   *session.MemoryLocker
	invs     *session.MemoryInvocations
}

// newBadInputFleet makes the streams, the requests stream with the
// duplicate window dupWindow (a short one stands for "ten minutes later");
// every agent of its workers answers with m.
func newBadInputFleet(t *testing.T, ctx context.Context, dupWindow time.Duration, m model.Model) *badInputFleet {
	t.Helper()
	js, nc, srv := natstest.JetStream(t)
	sc := streams.Config{RequestDuplicates: dupWindow, WorkerAckWait: 5 * time.Second}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	f := &badInputFleet{t: t, js: js, nc: nc, srv: srv, sc: sc, m: m}
	f.sessions, f.locker, f.invs = session.NewMemory(), session.NewMemoryLocker(), session.NewMemoryInvocations(time.Hour)
	return f
}

// startWorker runs a worker with the agents named until the test ends or
// the function it returns (stop, which waits for it) is called.
func (f *badInputFleet) startWorker(agents ...string) context.CancelFunc {
	t := f.t
	t.Helper()
	runners := map[string]*agent.Runner{}
	for _, name := range agents {
		runners[name] = &agent.Runner{Agent: &agent.Agent{Name: name, Model: f.m, MaxModelCalls: 3}, Sessions: f.sessions}
	}
	w, err := worker.New(context.Background(), worker.Config{
		Name: "w-" + strings.Join(agents, "-"), FetchWait: 100 * time.Millisecond, BusyDelay: 50 * time.Millisecond,
		InfraBackoffMax: 100 * time.Millisecond, AckWait: f.sc.WorkerAckWait,
	}, worker.Deps{
		JS: f.js, Streams: f.sc, Agents: runners, Locker: f.locker, Invocations: f.invs,
		DLQ:    dlq.NewPublisher(f.js, dlq.Config{Stream: f.sc.DLQStream, Prefix: f.sc.DLQPrefix}),
		Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(wctx); close(stopped) }()
	var once sync.Once
	stop := func() { once.Do(func() { wcancel(); <-stopped }) }
	t.Cleanup(stop)
	return stop
}

// outliveDuplicateWindow waits until the requests stream's duplicate
// window has passed (twice over) since now.
func outliveDuplicateWindow(sc streams.Config) {
	firstRun := time.Now()
	for time.Since(firstRun) < 2*sc.RequestDuplicates {
		time.Sleep(50 * time.Millisecond) // outlive the stream's duplicate window
	}
}

// client is a producer's client of the fleet's streams.
func (f *badInputFleet) client() *client.Client {
	f.t.Helper()
	c, err := client.New(f.js, f.nc, producercli.ClientConfig(f.sc))
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}
