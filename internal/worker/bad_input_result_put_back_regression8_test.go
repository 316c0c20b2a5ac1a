package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// resultFailOnceJS fails the next publish on a result subject once armed
// (the results stream's leader moving, a PubAck timeout for a publish the
// stream never stored), while the connection itself stays up, so the
// message's Term still reaches the server.
type resultFailOnceJS struct {
	jetstream.JetStream
	pfx    string
	armed  atomic.Bool
	failed atomic.Int32
}

func (f *resultFailOnceJS) Publish(ctx context.Context, subj string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if strings.HasPrefix(subj, f.pfx) && f.armed.CompareAndSwap(true, false) {
		f.failed.Add(1)
		return nil, errors.New("injected: nats: timeout (result not stored)")
	}
	return f.JetStream.Publish(ctx, subj, data, opts...)
}

// Regression (found in review, twenty-fifth session): a request refused as
// BAD_INPUT whose invocation id is readable must get its "failed" result
// (README: "DLQ as BAD_INPUT, result `failed` when the id is readable,
// `Term()`"): the producer (`producer send --wait`, a batch job) waits for it
// on agent.results.<id>. When that result's publish failed, deadLetterRaw
// only logged "publish the dead letter's result" and terminated the message
// anyway: nobody ever published the result, and the producer waited until
// its own timeout. The message is now put back (nakInfra), as on every other
// path whose result publish fails; the redelivery's DLQ publish is a
// duplicate (same SourceMsgID, not counted again), and it publishes the
// result and terminates.
func TestBadInputResultPublishFailurePutsBack(t *testing.T) {
	e := newEnv(t)
	fj := &resultFailOnceJS{pfx: e.sc.ResultSubject("")}
	e.deps = func(d *worker.Deps) { fj.JetStream = d.JS; d.JS = fj }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
	fj.armed.Store(true)
	const id = "inv-r8-bad-result"
	// Missing user_id / session_id / message: BAD_INPUT, id readable.
	e.publishRaw(e.sc.RequestSubject("support"), []byte(`{"v":1,"invocation_id":"`+id+`","agent":"support"}`), id, nil)
	eventually(t, "the refusal terminated", func() bool { return e.pending() == 0 && w.count("support", "bad_input") >= 1 })
	if n := fj.failed.Load(); n != 1 {
		t.Fatalf("injected result publish failures %d, want 1", n)
	}
	if n := w.count("_unknown", "nak_infra"); n != 1 {
		t.Errorf("nak_infra = %v, want 1 (the failed result publish puts the message back; an undecoded request is labelled _unknown)", n)
	}
	if n := w.count("support", "bad_input"); n != 1 {
		t.Errorf("bad_input = %v, want 1 (terminated once, by the redelivery)", n)
	}
	if en := e.dlqEntries(); len(en) != 1 || en[0].Class != "BAD_INPUT" {
		t.Fatalf("DLQ entries %+v, want one BAD_INPUT entry (the redelivery's publish is a duplicate)", en)
	}
	if n := testutilValue(w.metrics.DeadLetters.WithLabelValues("BAD_INPUT", "support")); n != 1 {
		t.Errorf("dead letters counted %v, want 1", n)
	}
	ctx := context.Background()
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject(id))
	if err != nil {
		t.Fatalf("the message was terminated and no result for %s was ever published (the producer waits for ever): %v", id, err)
	}
	if r, _ := envelope.DecodeResult(last.Data); r == nil || r.Status != envelope.StatusFailed || r.ErrorClass != "BAD_INPUT" {
		t.Fatalf("stored result %s, want a failed BAD_INPUT one", last.Data)
	}
}
