package producercli_test

import (
	"bytes"
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/producercli"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/client"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// lostAckJS publishes for real but loses the PubAck of the first
// n publishes (the request is stored; the client sees no PubAck in time),
// as a server restart right after storing it does.
type lostAckJS struct {
	jetstream.JetStream
	mu   sync.Mutex
	lose int
}

func (j *lostAckJS) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := j.JetStream.PublishMsg(ctx, msg, opts...)
	j.mu.Lock()
	defer j.mu.Unlock()
	if err == nil && j.lose > 0 {
		j.lose--
		return nil, context.DeadlineExceeded // stored; its PubAck lost
	}
	return ack, err
}

// Regression (found in review, twenty-first session): a resend whose
// first try's PubAck was lost gets the run's result, not the old refusal.
// A line refused as BAD_INPUT before is sent again (its agent is deployed
// now, the duplicate window has passed). The first try is stored, but its
// PubAck is lost; publish sends it again and the server drops that copy
// as a duplicate OF THE FIRST TRY (not of the refused request). runLine
// then takes Duplicate to mean "the refused request is still in the
// window" and reports the stored refusal at once (Earlier, Duplicate) and
// the summary says to wait the window out, while the worker runs the new
// request and completes it.
func TestBatchLostPubAckAfterBadInputReportsTheOldRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := model.Func{ModelName: "test", Generate: func(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) { yield(agenttest.Text("done"), nil) }
	}}
	f := newBadInputFleet(t, ctx, 2*time.Second, done)
	lines, err := producercli.ParseBatch(strings.NewReader(
		`{"invocation_id":"ticket-9","agent":"billing","user_id":"u1","session_id":"s1","text":"Why was I charged twice?"}` + "\n"))
	if err != nil || len(lines) != 1 || lines[0].Err != nil {
		t.Fatalf("test premise: %+v %v", lines, err)
	}
	opts := producercli.BatchOptions{Concurrency: 1, Timeout: 20 * time.Second}

	stop := f.startWorker("support")
	first, err := producercli.RunBatch(ctx, f.client(), lines, opts)
	if err != nil || first[0].Outcome != producercli.OutcomeFailed || first[0].Class != "BAD_INPUT" {
		t.Fatalf("test premise: first run %+v %v, want failed BAD_INPUT", first, err)
	}
	stop()
	f.startWorker("support", "billing")
	outliveDuplicateWindow(f.sc)

	lossy := &lostAckJS{JetStream: f.js, lose: 1}
	c, err := client.New(lossy, f.nc, producercli.ClientConfig(f.sc))
	if err != nil {
		t.Fatal(err)
	}
	second, err := producercli.RunBatch(ctx, c, lines, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The worker did run the resent request: a completed result follows.
	var ran bool
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s, err := f.client().Lookup(ctx, "ticket-9"); err == nil && s.Status == envelope.StatusCompleted {
			ran = true
			break
		}
	}
	var summary bytes.Buffer
	producercli.WriteSummary(&summary, second)
	if r := second[0]; r.Outcome != producercli.OutcomeCompleted || r.Earlier {
		t.Fatalf("rerun whose first try's PubAck was lost: outcome %q %s (duplicate %v, earlier %v); the worker ran it (completed result stored: %v); want completed. Summary:\n%s",
			r.Outcome, r.Class, r.Duplicate, r.Earlier, ran, summary.String())
	}
}
