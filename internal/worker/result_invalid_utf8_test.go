package worker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
)

// Regression (found in review, twenty-third session): the invocation record
// kept a result with invalid UTF-8 replaced byte by byte while the published
// one had a run replaced at once, so a redelivery after a lost ack published
// a second, different result.
//
// A worker completes an invocation, publishes its result and dies before
// its ack reaches the server (its first ack is dropped here). The
// redelivery finds the completed record and must publish nothing new: the
// result it re-publishes from the record is compared with the stored one
// byte for byte (ensureResult), and any difference is published again
// (without a message id) as a second result.
//
// The record and the published result are not the same bytes when the
// answer holds invalid UTF-8 of more than one byte in a row: the record is
// written with encoding/json, which replaces each bad byte with U+FFFD,
// while the result's Encode first runs strings.ToValidUTF8, which replaces
// each run with one. So the redelivery's re-publish differs from the
// first, and the user gets a second final result for one request (with
// another text). Correct: the recorded result is the published one (record
// what Encode produces, or encode once and store those bytes), and a
// redelivery after a lost ack publishes nothing.
func TestLostAckAfterPublishRepublishesNothingWithInvalidUTF8(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var dropped atomic.Bool
	ljs := &lossyJS{JetStream: e.js, dropAck: func(m jetstream.Msg) bool {
		return m.Headers().Get(jetstream.MsgIDHeader) == "inv-bytes" && dropped.CompareAndSwap(false, true)
	}}
	e.deps = func(d *worker.Deps) { d.JS = ljs }
	// An answer with two bad bytes in a row (a model or after-model
	// callback that cut a multi-byte character).
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("Refunded 5\xe2\x82 \xff\xfe EUR.")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-bytes", "sb", "refund please"), nil)
	first := e.await("inv-bytes")
	// The redelivery after AckWait (3 s) finds the completed record.
	eventually(t, "the redelivery acked as a duplicate", func() bool {
		return w.count("support", "duplicate") == 1 && e.pending() == 0
	})
	s, err := e.js.Stream(ctx, e.sc.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.LastSeq; n != 1 {
		last, err := s.GetLastMsgForSubject(ctx, e.sc.ResultSubject("inv-bytes"))
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("%d results were published for one request; want 1. First content %q, last published %s",
			n, first.Content, last.Data)
	}
}
