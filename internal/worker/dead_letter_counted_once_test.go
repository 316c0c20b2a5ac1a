package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// failOnceInvocations fails the first write of a dead letter's record
// (dead_lettered or failed), as a record store outage right after the DLQ
// publish would; after, if set, runs first. Every other write goes through.
type failOnceInvocations struct {
	session.InvocationStore
	failed atomic.Bool
	after  func()
}

func (s *failOnceInvocations) Transition(ctx context.Context, rec *session.Invocation) error {
	if rec.Status.Terminal() && rec.Status != session.InvocationCompleted && s.failed.CompareAndSwap(false, true) {
		if s.after != nil {
			s.after()
		}
		return errors.New("test: record store unavailable")
	}
	return s.InvocationStore.Transition(ctx, rec)
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a dead letter's
// metrics were counted when its DLQ entry was published, before the
// invocation record was written. A record write that failed put the
// message back, and its redelivery, which published the same entry again (a
// duplicate the DLQ dropped), counted the failure a second time: one AUTH
// failure was two page events and two dead letters, one loop two loop
// alerts. Each is counted once the record holds the outcome.
func TestDeadLetterCountedOnceWhenItsRecordWriteFails(t *testing.T) {
	loop := func() []agenttest.Step {
		var steps []agenttest.Step
		for range 6 {
			steps = append(steps, agenttest.Reply(agenttest.Call("get_order", map[string]any{"order_id": "A-1042"})))
		}
		return steps
	}
	for _, c := range []struct {
		class   string
		steps   []agenttest.Step
		counter func(m *worker.Metrics) prometheus.Collector
	}{
		{"AUTH", []agenttest.Step{
			agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 401}),
			agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 401}),
		}, func(m *worker.Metrics) prometheus.Collector { return m.Pages.WithLabelValues("AUTH", "support") }},
		{"CALL_BUDGET", loop(),
			func(m *worker.Metrics) prometheus.Collector { return m.LoopSuspects.WithLabelValues("support") }},
	} {
		t.Run(c.class, func(t *testing.T) {
			e := newEnv(t)
			invs := &failOnceInvocations{InvocationStore: e.invs}
			e.deps = func(d *worker.Deps) { d.Invocations = invs }
			ag := e.supportAgent(agenttest.NewScriptedModel(c.steps...))
			ag.MaxModelCalls = 2
			w := e.startWorker("w1", ag, worker.Config{InfraBackoffMax: time.Millisecond})
			id := "inv-count-once-" + c.class
			e.publish(request(id, "s1", "hi"), nil)
			res := e.await(id)
			if res.ErrorClass != c.class || !invs.failed.Load() {
				t.Fatalf("result %+v (record write failed: %v), want %s after a failed record write", res, invs.failed.Load(), c.class)
			}
			if n := len(e.dlqEntries()); n != 1 {
				t.Fatalf("%d DLQ entries, want 1", n)
			}
			dl := testutilValue(w.metrics.DeadLetters.WithLabelValues(c.class, "support"))
			alert := testutilValue(c.counter(w.metrics))
			t.Logf("after one %s failure whose record write failed once: dead letters %v, page/loop counter %v", c.class, dl, alert)
			if dl != 1 || alert != 1 {
				t.Errorf("one %s failure (one DLQ entry) counted %v times as a dead letter and %v times as a page/loop event, want 1 and 1: "+
					"the redelivery after the failed record write counted it again", c.class, dl, alert)
			}
		})
	}
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): the dead letter of
// a message the worker panicked on (afterPanic) was counted when its entry
// was published, before its record was written: a record write that failed
// put the message back, its redelivery panicked again and counted the same
// entry a second time.
func TestPanicDeadLetterCountedOnceWhenItsRecordWriteFails(t *testing.T) {
	e := newEnv(t)
	var bug atomic.Bool
	bug.Store(true)
	invs := &failOnceInvocations{InvocationStore: e.invs}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		for _, r := range d.Agents {
			r.Sessions = switchablePanicSessions{Memory: e.sessions, on: &bug}
		}
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	const id = "inv-count-once-panic"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.ErrorClass != "UNKNOWN" || !invs.failed.Load() {
		t.Fatalf("result %+v (record write failed: %v), want the panic's UNKNOWN dead letter after a failed record write", res, invs.failed.Load())
	}
	eventually(t, "the message terminated", func() bool { return e.pending() == 0 })
	if n := len(e.dlqEntries()); n != 1 {
		t.Fatalf("%d DLQ entries, want 1", n)
	}
	dl := testutilValue(w.metrics.DeadLetters.WithLabelValues("UNKNOWN", "support"))
	t.Logf("after one poison message whose record write failed once: dead letters %v", dl)
	if dl != 1 {
		t.Errorf("one panic dead letter (one DLQ entry) counted %v times, want 1", dl)
	}
}

// termLossyJS loses the first Term of each message (a connection blip):
// the message comes back after AckWait.
type termLossyJS struct {
	jetstream.JetStream
	lost atomic.Int32
}

func (j *termLossyJS) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	c, err := j.JetStream.Consumer(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	return termLossyConsumer{Consumer: c, js: j}, nil
}

type termLossyConsumer struct {
	jetstream.Consumer
	js *termLossyJS
}

func (c termLossyConsumer) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	out := make(chan jetstream.Msg, n)
	go func() {
		defer close(out)
		for m := range b.Messages() {
			out <- termLossyMsg{Msg: m, js: c.js}
		}
	}()
	return lossyBatch{MessageBatch: b, out: out}, nil
}

type termLossyMsg struct {
	jetstream.Msg
	js *termLossyJS
}

func (m termLossyMsg) Term() error {
	if meta, err := m.Metadata(); err == nil && meta.NumDelivered == 1 {
		m.js.lost.Add(1)
		return nil
	}
	return m.Msg.Term()
}

// Regression (left open in the twenty-third session, fixed in the twenty-fourth): a dead letter
// published as received (BAD_INPUT) has no record to count it after; it was
// counted on every publish, so a redelivery after a lost Term, whose entry
// the DLQ dropped as a duplicate, counted the refusal twice. It is counted
// when the DLQ stores its entry.
func TestRefusalCountedOnceWhenItsTermIsLost(t *testing.T) {
	e := newEnv(t)
	ljs := &termLossyJS{JetStream: e.js}
	e.deps = func(d *worker.Deps) { d.JS = ljs }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
	// Valid ids, no message: refused as BAD_INPUT.
	e.publishRaw(e.sc.RequestSubject("support"), []byte(`{"v":1,"invocation_id":"inv-refused-once","agent":"support"}`), "inv-refused-once", nil)
	eventually(t, "the redelivery after the lost Term terminated", func() bool { return ljs.lost.Load() == 1 && e.pending() == 0 })
	if n := len(e.dlqEntries()); n != 1 {
		t.Fatalf("%d DLQ entries, want 1", n)
	}
	dl := testutilValue(w.metrics.DeadLetters.WithLabelValues("BAD_INPUT", "support"))
	t.Logf("after one refusal handled twice (its first Term lost): dead letters %v", dl)
	if dl != 1 {
		t.Errorf("one refusal (one DLQ entry) counted %v times, want 1", dl)
	}
	if r := e.await("inv-refused-once"); r.Status != envelope.StatusFailed {
		t.Errorf("result %+v, want failed", r)
	}
}
