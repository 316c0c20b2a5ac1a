package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// panickingSessions is a session service whose load panics (a bug in a
// store, a decoder): the panic escapes Runner.Invoke.
type panickingSessions struct{ *session.Memory }

func (panickingSessions) GetOrCreate(context.Context, session.Key) (*session.Session, error) {
	panic("session store bug")
}

// Regression (found in review, sixteenth session): A panic while an invocation runs is recovered by the worker (the message
// goes back), but the in-flight gauge must come back down with it: it is
// "Invocations running in this worker", and nothing runs any more.
func TestInFlightGaugeFallsAfterAPanickingInvocation(t *testing.T) {
	e := newEnv(t)
	const panicLine = "panic while handling a message"
	watch := logtest.New(panicLine)
	e.deps = func(d *worker.Deps) {
		d.Logger = zerolog.New(watch)
		for _, r := range d.Agents {
			r.Sessions = panickingSessions{session.NewMemory()}
		}
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{Concurrency: 1, InfraBackoffMax: time.Minute}) // no redelivery while the test reads the gauge
	e.publish(request("inv-panic", "s1", "hi"), nil)
	watch.Wait(t, panicLine) // the handler's recover has run
	if got := testutil.ToFloat64(w.metrics.InFlight); got != 0 {
		t.Fatalf("%s = %v after the panicking invocation was recovered, want 0 (nothing runs)", worker.MetricInFlight, got)
	}
}
