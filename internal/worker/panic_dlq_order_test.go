package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
)

// panicSessions panics loading a session: a bug hit after the
// invocation's running record was written.
type panicSessions struct{ *session.Memory }

func (panicSessions) GetOrCreate(context.Context, session.Key) (*session.Session, error) {
	panic("session decoder bug")
}

// Regression (found in review, eighteenth session): afterPanic recorded
// the invocation dead_lettered before it published the DLQ entry. When
// that publish failed (a NATS blip: the message is Nak'ed "own
// infrastructure"), the redelivery found the dead_lettered record, took it
// for a duplicate of a finished dead letter and acked it: the message was
// gone, the producer was told "dead_lettered", and no DLQ entry existed
// for anyone to replay. afterPanic now publishes the entry first, as
// deadLetter does.
func TestPanicDeadLetterIsNotLostWhenTheDLQPublishFails(t *testing.T) {
	e := newEnv(t)
	e.deps = func(d *worker.Deps) {
		for _, r := range d.Agents {
			r.Sessions = panicSessions{e.sessions}
		}
	}
	ctx := context.Background()
	// The DLQ publish fails: no stream listens on its subjects.
	if err := e.js.DeleteStream(ctx, e.sc.DLQStream); err != nil {
		t.Fatal(err)
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 1, InfraBackoffMax: 300 * time.Millisecond})
	const id = "inv-panic-dlq-fail"
	e.publish(request(id, "s1", "hi"), nil)
	eventually(t, "the failed dead letter Nak'ed", func() bool { return w.count("support", "nak_infra") >= 1 })
	// NATS is back.
	if _, err := streams.Ensure(ctx, e.js, e.sc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the message ended", func() bool { return e.pending() == 0 })
	if n := len(e.dlqEntries()); n == 0 {
		t.Errorf("the message left the requests stream (acked %v times as a duplicate) with no DLQ entry: "+
			"the request the worker panicked on is lost, though its producer was told it was dead-lettered",
			w.count("support", "duplicate"))
	}
}
