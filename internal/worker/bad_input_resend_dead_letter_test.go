package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/support"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// newEnvWithStreams is newEnv with the streams configuration sc (before
// WithDefaults).
func newEnvWithStreams(t *testing.T, sc streams.Config) *env {
	t.Helper()
	js, nc, _ := natstest.JetStream(t)
	sc = sc.WithDefaults()
	if _, err := streams.Ensure(context.Background(), js, sc); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, js: js, nc: nc, sc: sc, sessions: session.NewMemory(), locker: session.NewMemoryLocker(),
		invs: session.NewMemoryInvocations(time.Hour), orders: support.NewMemoryOrders(support.DemoOrders()...),
		results: make(chan *envelope.Result, 100), seen: map[string]*envelope.Result{}}
	sub, err := nc.Subscribe(sc.ResultSubject("*"), func(m *nats.Msg) {
		if r, err := envelope.DecodeResult(m.Data); err == nil {
			e.results <- r
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return e
}

// Regression (found in review, twenty-third session): a BAD_INPUT
// refusal's DLQ entry took the message id of its invocation's first
// failure generation (dlq-<id>-0), so the dead letter of the producer's
// resend of the same invocation id that then failed was dropped as its
// duplicate and the user's "queued" work was never replayed.
//
// A request refused as BAD_INPUT (here: a body naming another agent than
// its subject; in a fleet mid-rollout, an agent the worker does not run
// yet) writes no invocation record. The producer's resend of the same
// invocation (producer batch reruns BAD_INPUT lines with their ids once the
// requests' duplicate window has passed) then runs, and when that run is
// dead-lettered (a transient failure: result "queued") its DLQ entry must
// be stored beside the refusal's, which is now published as received
// (dlq.SourceMsgID, by the request's stream sequence).
func TestBadInputDeadLetterDoesNotSwallowTheResendsDeadLetter(t *testing.T) {
	// A short requests window stands for "ten minutes later"; the DLQ's
	// stays at its default (10m).
	e := newEnvWithStreams(t, streams.Config{WorkerAckWait: 3 * time.Second, RequestDuplicates: time.Second})
	llm := agenttest.NewScriptedModel(
		agenttest.Fail(&model.ProviderError{Provider: "test", StatusCode: 429, Status: "RESOURCE_EXHAUSTED"}))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{})

	const id = "inv-bad-input-resend"
	// 1. Refused: the body names "support", the subject another agent.
	bad := request(id, "s1", "refund A-1")
	data, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	e.publishRaw(e.sc.RequestSubject("other"), data, id, nil)
	if res := e.await(id); res.Status != envelope.StatusFailed || res.ErrorClass != "BAD_INPUT" {
		t.Fatalf("refusal: %+v, want failed BAD_INPUT", res)
	}

	// 2. The producer's resend, once the requests stream takes it again.
	good, err := json.Marshal(request(id, "s1", "refund A-1"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := nats.NewMsg(e.sc.RequestSubject("support"))
		m.Data = good
		m.Header.Set(envelope.HeaderMsgID, id)
		ack, err := e.js.PublishMsg(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if !ack.Duplicate {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resend stayed a duplicate")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := e.await(id)
	if res.Status != envelope.StatusDeadLettered || res.UserMessage != worker.MsgQueued {
		t.Fatalf("resend: %+v, want dead_lettered %q", res, worker.MsgQueued)
	}

	// The user was told "queued": the DLQ must hold a replayable entry of
	// the run, not only the refusal.
	var classes []string
	for _, en := range e.dlqEntries() {
		if en.InvocationID != id {
			continue
		}
		classes = append(classes, en.Class)
		if en.Class == "RATE_LIMITED" {
			return
		}
	}
	t.Fatalf("DLQ entries of %s have classes %v: the resend's RATE_LIMITED dead letter was dropped as a duplicate of the BAD_INPUT refusal (the same Nats-Msg-Id), yet its user was told %q",
		id, classes, worker.MsgQueued)
}
