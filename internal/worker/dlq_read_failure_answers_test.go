package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review of this session's fix, twenty-fourth session): publishEntry read
// the stored entry after every duplicate PubAck, and a read that failed put
// the message back (nakInfra) although the DLQ held an entry of this very
// generation: the redelivery ran the invocation again (model calls spent
// again, a run counted), and while the read kept failing no delivery got
// past it, not even the run limit's UNKNOWN dead letter (its publish is a
// duplicate too): the request was never answered. A failed read never puts
// the message back now: the class this worker stored there decides, or
// else e's class (published beside it when replayed automatically, kept
// when not).

// noDLQReadJS refuses every look-up of the DLQ stream (a worker whose NATS
// account may publish dead letters but not read them, or a read failing
// while the publish went through); reads counts them.
type noDLQReadJS struct {
	jetstream.JetStream
	dlq   string
	reads atomic.Int32
}

func (j *noDLQReadJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == j.dlq {
		j.reads.Add(1)
		return nil, errors.New("test: DLQ stream cannot be read")
	}
	return j.JetStream.Stream(ctx, name)
}

func TestDeadLetterAnsweredWhenTheStoredEntryCannotBeRead(t *testing.T) {
	e := newEnv(t)
	invs := &failOnceInvocations{InvocationStore: e.invs}
	rj := &noDLQReadJS{dlq: e.sc.DLQStream}
	e.deps = func(d *worker.Deps) {
		d.Invocations = invs
		rj.JetStream = d.JS
		d.JS = rj
	}
	var steps []agenttest.Step
	for range 50 {
		steps = append(steps, agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	}
	llm := agenttest.NewScriptedModel(steps...)
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 3, InfraBackoffMax: time.Millisecond})
	const id = "inv-dlq-read"
	e.publish(request(id, "s1", "hi"), nil)
	// Answered, or past the run limit: MaxDeliveries runs, then deliveries
	// that only try to dead-letter the run limit's UNKNOWN failure.
	answered := false
	eventually(t, "an answer or deliveries past the run limit", func() bool {
		for len(e.results) > 0 {
			if r := <-e.results; r.InvocationID == id {
				answered = true
			}
		}
		return answered || w.count("support", "nak_infra") >= 10
	})
	eventually(t, "the message acked", func() bool { return !answered || e.pending() == 0 })
	t.Logf("record write failed once: %v; DLQ reads refused %d; model calls %d; nak_infra %v; DLQ entries %d; answered %v",
		invs.failed.Load(), rj.reads.Load(), llm.Calls(), w.count("support", "nak_infra"), len(e.dlqEntries()), answered)
	if !answered || llm.Calls() > 2 {
		t.Errorf("the DLQ holds the RATE_LIMITED entry of this generation, yet after %d model calls and %v deliveries put back the request is unanswered (answered=%v): "+
			"each failed read of the stored entry re-ran the invocation, and nothing gets past it", llm.Calls(), w.count("support", "nak_infra"), answered)
	}
	if n := len(e.dlqEntries()); n != 1 {
		t.Errorf("%d DLQ entries, want the one this worker stored (it knows its class without reading it)", n)
	}
}

// The entry holding the generation's id was stored by another worker (or
// before a restart): this worker cannot read it and does not know its
// class. A failure replayed automatically is published beside it (the work
// must have an entry the replayer replays); one waiting for a person keeps
// the stored entry. Either way the request is answered after one run.
func TestDeadLetterOfAnotherWorkersUnreadableEntry(t *testing.T) {
	for _, c := range []struct {
		class   string
		fail    error
		entries int
	}{
		{"RATE_LIMITED", &model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}, 2},
		{"AUTH", &model.ProviderError{Provider: "test", StatusCode: 401}, 1},
	} {
		t.Run(c.class, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			id := "inv-unreadable-" + c.class
			req := request(id, "s1", "hi")
			data, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			// An earlier delivery's entry, which another worker stored and
			// did not record.
			earlier := &dlq.Entry{InvocationID: id, Agent: "support", Class: "UNKNOWN", Reason: "an earlier delivery", Worker: "w0"}
			earlier.SetRequest(data)
			if _, err := dlq.NewPublisher(e.js, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix}).Publish(ctx, earlier); err != nil {
				t.Fatal(err)
			}
			rj := &noDLQReadJS{dlq: e.sc.DLQStream}
			e.deps = func(d *worker.Deps) {
				rj.JetStream = d.JS
				d.JS = rj
			}
			llm := agenttest.NewScriptedModel(agenttest.Fail(c.fail), agenttest.Fail(c.fail))
			w := e.startWorker("w1", e.supportAgent(llm), worker.Config{InfraBackoffMax: time.Millisecond})
			e.publish(req, nil)
			res := e.await(id)
			eventually(t, "the message acked", func() bool { return e.pending() == 0 })
			var classes []string
			for _, en := range e.dlqEntries() {
				classes = append(classes, en.Class)
			}
			dl := testutilValue(w.metrics.DeadLetters.WithLabelValues(c.class, "support"))
			t.Logf("result %s %s; model calls %d; DLQ reads refused %d; DLQ entries %v; %s counted %v",
				res.Status, res.ErrorClass, llm.Calls(), rj.reads.Load(), classes, c.class, dl)
			if res.ErrorClass != c.class || llm.Calls() != 1 || w.count("support", "nak_infra") != 0 {
				t.Errorf("result %s %s after %d model calls and %v deliveries put back, want %s after one run",
					res.Status, res.ErrorClass, llm.Calls(), w.count("support", "nak_infra"), c.class)
			}
			if len(classes) != c.entries {
				t.Errorf("DLQ entries %v, want %d", classes, c.entries)
			}
			if res.Status == envelope.StatusDeadLettered && res.UserMessage == worker.MsgQueued && classes[len(classes)-1] != c.class {
				t.Errorf("the user was told %q, but no %s entry is in the DLQ", res.UserMessage, c.class)
			}
		})
	}
}
