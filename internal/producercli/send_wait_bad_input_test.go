package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, nineteenth session): `producer send
// --invocation ID --wait` run again for a request the (real) worker refused
// as BAD_INPUT (its agent was not deployed yet): the worker wrote no
// invocation record, so the resend (the duplicate window has passed) runs
// and completes. But send --wait awaits with Await, which
// returns the stored result of the earlier refusal at once: the command
// prints "failed BAD_INPUT" and exits 4 (not completed) for a request that
// is running and completes (a refund done while the script reports a
// failure). RunBatch handles exactly this case (resend + AwaitAfter the
// stored sequence, eighteenth session); send --wait (and
// client.SubmitAndAwait) do not. Correct: a send that was not a duplicate
// waits for the result that follows a stored BAD_INPUT refusal, prints
// "done" and exits 0.
func TestSendWaitAfterABadInputRefusalReportsTheNewResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js, nc, srv := natstest.JetStream(t)
	sc := streams.Config{RequestDuplicates: 200 * time.Millisecond, WorkerAckWait: 5 * time.Second}.WithDefaults()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	sessions, locker, invs := session.NewMemory(), session.NewMemoryLocker(), session.NewMemoryInvocations(time.Hour)
	release := make(chan struct{})
	held := model.Func{ModelName: "test", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			select {
			case <-release:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			yield(agenttest.Text("done"), nil)
		}
	}}
	startWorker := func(agents ...string) context.CancelFunc {
		runners := map[string]*agent.Runner{}
		for _, name := range agents {
			runners[name] = &agent.Runner{Agent: &agent.Agent{Name: name, Model: held, MaxModelCalls: 3}, Sessions: sessions}
		}
		w, err := worker.New(context.Background(), worker.Config{
			Name: "w-" + strings.Join(agents, "-"), FetchWait: 100 * time.Millisecond, BusyDelay: 50 * time.Millisecond,
			InfraBackoffMax: 100 * time.Millisecond, AckWait: sc.WorkerAckWait,
		}, worker.Deps{
			JS: js, Streams: sc, Agents: runners, Locker: locker, Invocations: invs,
			DLQ:    dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix}),
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
	send := func() (int, string) {
		var out, errb bytes.Buffer
		env := producercli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		code := producercli.Run(ctx, []string{"--nats-url", srv.ClientURL(), "--timeout", "20s",
			"send", "--agent", "billing", "--user", "u1", "--session", "s1", "--invocation", "ticket-9", "--wait",
			"Why was I charged twice?"}, env)
		return code, "stdout " + strings.TrimSpace(out.String()) + "; stderr " + strings.TrimSpace(errb.String())
	}

	// The fleet does not run "billing" yet: refused as BAD_INPUT.
	stop := startWorker("support")
	if code, out := send(); code != producercli.ExitNotCompleted || !strings.Contains(out, "BAD_INPUT") {
		t.Fatalf("test premise: first send exit %d (%s), want 4 failed BAD_INPUT", code, out)
	}
	stop()

	// "billing" is deployed, the duplicate window has passed, the same
	// command is run again.
	startWorker("support", "billing")
	firstRun := time.Now()
	for time.Since(firstRun) < 2*sc.RequestDuplicates {
		time.Sleep(50 * time.Millisecond) // outlive the stream's duplicate window
	}
	// A tap on the result look-up (a direct get of the last result): the
	// model answers only once the command has looked, so the order is
	// fixed: look-up, then the new result.
	tap := natstest.Connect(t, srv)
	looked, err := tap.SubscribeSync("$JS.API.DIRECT.GET." + sc.ResultsStream + "." + sc.ResultSubject("ticket-9"))
	if err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out := send()
		done <- result{code, out}
	}()
	if _, err := looked.NextMsgWithContext(ctx); err != nil {
		t.Fatalf("the command never looked its result up: %v", err)
	}
	close(release)
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("send did not end")
	}
	// The invocation did complete.
	c, err := client.New(js, nc, producercli.ClientConfig(sc))
	if err != nil {
		t.Fatal(err)
	}
	var final string
	for ctx.Err() == nil {
		if st, err := c.Lookup(ctx, "ticket-9"); err == nil && st.Status == envelope.StatusCompleted {
			final = string(st.Status)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r.code != producercli.ExitOK || !strings.Contains(r.out, "done") {
		t.Fatalf("send --wait of the resent request: exit %d (%s); the invocation ended %q; want exit 0 and its answer \"done\", not the earlier refusal",
			r.code, r.out, final)
	}
}
