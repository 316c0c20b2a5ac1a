package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// Regression (found in review of this session's fix, twenty-fourth session): a BAD_INPUT refusal
// was counted only when its DLQ publish was not a duplicate. When the
// PubAck of the entry it stored was lost, the message was put back, the
// redelivery's publish was a duplicate taken as "counted already" (it was
// not), and the refusal was never counted: AgentfleetBadInput, built on
// agentfleet_dead_letters_total{class="BAD_INPUT"}, stayed silent. A
// duplicate is counted unless this worker counted that entry itself; a
// run's dead letter whose PubAck was lost is counted the same way.

// lostPubAckJS stores the first DLQ publish and then reports a failure, as
// a PubAck lost on the way back (a timeout) does.
type lostPubAckJS struct {
	jetstream.JetStream
	pfx  string
	lost atomic.Bool
}

func (j *lostPubAckJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := j.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil && strings.HasPrefix(m.Subject, j.pfx) && j.lost.CompareAndSwap(false, true) {
		return nil, errors.New("test: PubAck lost (the entry was stored)")
	}
	return ack, err
}

// lostPubAckEnv is an env whose workers lose the PubAck of their first DLQ
// publish.
func lostPubAckEnv(t *testing.T) (*env, *lostPubAckJS) {
	e := newEnv(t)
	lj := &lostPubAckJS{pfx: e.sc.DLQPrefix + "."}
	e.deps = func(d *worker.Deps) {
		lj.JetStream = d.JS
		d.DLQ = dlq.NewPublisher(lj, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix})
	}
	return e, lj
}

func TestRefusalCountedWhenItsPubAckIsLost(t *testing.T) {
	e, lj := lostPubAckEnv(t)
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{InfraBackoffMax: time.Millisecond})
	e.publishRaw(e.sc.RequestSubject("support"), []byte(`{"v":1,"invocation_id":"inv-bad-puback","agent":"support"}`), "inv-bad-puback", nil)
	eventually(t, "the refusal terminated", func() bool { return e.pending() == 0 && w.count("support", "bad_input") == 1 })
	n := testutilValue(w.metrics.DeadLetters.WithLabelValues("BAD_INPUT", "support"))
	t.Logf("PubAck lost: %v; DLQ entries %d; BAD_INPUT dead letters counted %v", lj.lost.Load(), len(e.dlqEntries()), n)
	if !lj.lost.Load() || len(e.dlqEntries()) != 1 || n != 1 {
		t.Errorf("one BAD_INPUT entry in the DLQ counted %v times, want 1", n)
	}
}

func TestRunDeadLetterCountedWhenItsPubAckIsLost(t *testing.T) {
	e, lj := lostPubAckEnv(t)
	rl := func() agenttest.Step {
		return agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"})
	}
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel(rl(), rl())), worker.Config{InfraBackoffMax: time.Millisecond})
	const id = "inv-run-puback"
	e.publish(request(id, "s1", "hi"), nil)
	if res := e.await(id); res.ErrorClass != "RATE_LIMITED" || !lj.lost.Load() {
		t.Fatalf("result %+v (PubAck lost: %v), want RATE_LIMITED", res, lj.lost.Load())
	}
	eventually(t, "the message acked", func() bool { return e.pending() == 0 })
	n := testutilValue(w.metrics.DeadLetters.WithLabelValues("RATE_LIMITED", "support"))
	t.Logf("DLQ entries %d; RATE_LIMITED dead letters counted %v", len(e.dlqEntries()), n)
	if len(e.dlqEntries()) != 1 || n != 1 {
		t.Errorf("%d DLQ entries counted %v times, want one entry counted once", len(e.dlqEntries()), n)
	}
}
