package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// Regression (found in review, twentieth session): a burst for one session
// (a batch job's conversation, a user resending) as long as the consumer's
// MaxAckPending: one invocation runs, the others find the session busy and
// were Nak'ed with BusyDelay. A delayed Nak keeps the message pending on
// the server, so those Naks held every MaxAckPending slot: no other
// session's request was delivered to any worker (free slots everywhere)
// until the hot session had drained. One hot session stalled the whole
// fleet. Now a message that finds its session busy again is requeued (a
// copy at the end of the stream, the message acked): the slots free up, and
// every hot request still runs exactly once.
func TestHotSessionAtMaxAckPendingDoesNotStallOtherSessions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.sc.WorkerMaxAckPending = 4
	if _, err := streams.Ensure(ctx, e.js, e.sc); err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var relOnce sync.Once
	defer relOnce.Do(func() { close(release) })
	slow := tool.MustFunc("slow_lookup", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		once.Do(func() { close(entered) })
		<-release
		return tool.OK(nil), nil
	})
	var steps []agenttest.Step
	steps = append(steps, agenttest.Reply(agenttest.Call("slow_lookup", nil)))
	for range 10 {
		steps = append(steps, agenttest.Reply(agenttest.Text("Done.")))
	}
	llm := agenttest.NewScriptedModel(steps...)
	w := e.startWorker("w1", e.supportAgent(llm, slow), worker.Config{Concurrency: 8})
	for i := range 4 {
		e.publish(request(fmt.Sprintf("inv-hot-%d", i), "hot", "look it up"), nil)
	}
	<-entered
	e.publish(request("inv-other", "other", "hello"), nil)

	deadline := time.After(5 * time.Second)
wait:
	for {
		select {
		case r := <-e.results:
			if r.InvocationID == "inv-other" {
				if r.Status != envelope.StatusCompleted {
					t.Fatalf("result = %+v", r)
				}
				break wait
			}
			e.seen[r.InvocationID] = r
		case <-deadline:
			cons, err := e.js.Consumer(ctx, e.sc.RequestsStream, e.sc.WorkerConsumer)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := cons.Info(ctx)
			t.Fatalf("another session's request got no result in 5s while one invocation of a hot session runs and 7 slots are free "+
				"(ack pending %d of MaxAckPending %d, pending %d, redelivered %d)",
				info.NumAckPending, info.Config.MaxAckPending, info.NumPending, info.NumRedelivered)
		}
	}
	if n := w.count("support", "requeued"); n == 0 {
		t.Errorf("no message counted as requeued")
	}

	// Nothing lost, nothing run twice: every hot request completes once.
	relOnce.Do(func() { close(release) })
	for i := range 4 {
		if r := e.await(fmt.Sprintf("inv-hot-%d", i)); r.Status != envelope.StatusCompleted {
			t.Fatalf("inv-hot-%d: result = %+v", i, r)
		}
	}
	eventually(t, "the requests stream drains", func() bool { return e.pending() == 0 })
	// hot-0: the tool call and the answer; the four others one answer each.
	if n := llm.Calls(); n != 6 {
		t.Errorf("%d model calls, want 6 (each invocation run once)", n)
	}
	if n := w.count("support", "duplicate"); n != 0 {
		t.Errorf("%v duplicate deliveries: a requeue left two copies", n)
	}
}

// lossyJS is a JetStream whose worker consumer's fetched messages drop
// their first Ack when dropAck says so (a worker that crashed between the
// requeue's publish and the ack), and which records the PubAcks of the
// publishes with a requeue message id.
type lossyJS struct {
	jetstream.JetStream
	dropAck func(jetstream.Msg) bool

	mu   sync.Mutex
	acks map[string][]bool // requeue message id → Duplicate of each PubAck
}

func (j *lossyJS) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	c, err := j.JetStream.Consumer(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	return lossyConsumer{Consumer: c, dropAck: j.dropAck}, nil
}

func (j *lossyJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := j.JetStream.PublishMsg(ctx, m, opts...)
	// WithMsgID sets the header on the message.
	if id := m.Header.Get(jetstream.MsgIDHeader); err == nil && strings.HasPrefix(id, "requeue:") {
		j.mu.Lock()
		if j.acks == nil {
			j.acks = map[string][]bool{}
		}
		j.acks[id] = append(j.acks[id], ack.Duplicate)
		j.mu.Unlock()
	}
	return ack, err
}

func (j *lossyJS) pubAcks(id string) []bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]bool(nil), j.acks[id]...)
}

type lossyConsumer struct {
	jetstream.Consumer
	dropAck func(jetstream.Msg) bool
}

func (c lossyConsumer) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	out := make(chan jetstream.Msg, n)
	go func() {
		defer close(out)
		for m := range b.Messages() {
			out <- lossyMsg{Msg: m, dropAck: c.dropAck}
		}
	}()
	return lossyBatch{MessageBatch: b, out: out}, nil
}

type lossyBatch struct {
	jetstream.MessageBatch
	out chan jetstream.Msg
}

func (b lossyBatch) Messages() <-chan jetstream.Msg { return b.out }

type lossyMsg struct {
	jetstream.Msg
	dropAck func(jetstream.Msg) bool
}

func (m lossyMsg) Ack() error {
	if m.dropAck(m.Msg) {
		return nil
	}
	return m.Msg.Ack()
}

// Regression (found in review, twentieth session): a requeue whose ack of
// the original is lost (a crash between the copy's publish and the ack)
// leaves two messages of one invocation. The original comes back after
// AckWait; requeued again, its copy has the same message id and is dropped
// as a duplicate, and the invocation runs exactly once.
func TestRequeueWithALostAckRunsTheInvocationOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	key := session.Key{App: "support", UserID: "u1", SessionID: "hot"}
	if _, err := e.locker.Acquire(ctx, key, "someone-else", time.Hour); err != nil {
		t.Fatal(err)
	}
	var dropped atomic.Bool
	ljs := &lossyJS{JetStream: e.js, dropAck: func(m jetstream.Msg) bool {
		// The original's first ack (the one after its requeue).
		return m.Headers().Get(jetstream.MsgIDHeader) == "inv-lost-ack" && dropped.CompareAndSwap(false, true)
	}}
	e.deps = func(d *worker.Deps) { d.JS = ljs }
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("Done.")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})

	data, err := json.Marshal(request("inv-lost-ack", "hot", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(e.sc.RequestSubject("support"))
	m.Data = data
	ack, err := e.js.PublishMsg(ctx, m, jetstream.WithMsgID("inv-lost-ack"))
	if err != nil {
		t.Fatal(err)
	}
	id := worker.RequeueMsgID("inv-lost-ack", ack.Sequence)
	// The original is requeued, its ack is lost, it comes back after
	// AckWait (3s) and is requeued again: the second copy is a duplicate.
	eventually(t, "the original requeued twice", func() bool { return len(ljs.pubAcks(id)) >= 2 })
	if got := ljs.pubAcks(id); got[0] || !got[1] {
		t.Fatalf("PubAcks of %s: duplicate %v, want a stored copy, then a duplicate", id, got)
	}
	if err := e.locker.Release(ctx, key, "someone-else"); err != nil {
		t.Fatal(err)
	}
	if r := e.await("inv-lost-ack"); r.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", r)
	}
	eventually(t, "the requests stream drains", func() bool { return e.pending() == 0 })
	if n := llm.Calls(); n != 1 {
		t.Fatalf("%d model calls: the invocation ran more than once", n)
	}
	if n := w.count("support", "duplicate"); n != 0 {
		t.Errorf("%v duplicate deliveries, want none (the second copy was never stored)", n)
	}
}

// Regression (found in review, twentieth session): the two messages a
// crash between a requeue's publish and its ack can leave (the original,
// and its copy with the requeue's message id and the delivery count) are
// handled as a redelivery is: one runs, the other finds the completion
// record and is acked as a duplicate, and the result says every delivery.
func TestRequeuedCopyAndItsOriginalRunOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("Done.")))
	data, err := json.Marshal(request("inv-two-copies", "s1", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(e.sc.RequestSubject("support"))
	m.Data = data
	ack, err := e.js.PublishMsg(ctx, m, jetstream.WithMsgID("inv-two-copies"))
	if err != nil {
		t.Fatal(err)
	}
	c := nats.NewMsg(e.sc.RequestSubject("support"))
	c.Data = data
	c.Header.Set(worker.HeaderPriorDeliveries, "3")
	if _, err := e.js.PublishMsg(ctx, c, jetstream.WithMsgID(worker.RequeueMsgID("inv-two-copies", ack.Sequence))); err != nil {
		t.Fatal(err)
	}
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	r := e.await("inv-two-copies")
	if r.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", r)
	}
	eventually(t, "the other message acked as a duplicate", func() bool { return w.count("support", "duplicate") == 1 })
	eventually(t, "the requests stream drains", func() bool { return e.pending() == 0 })
	if n := llm.Calls(); n != 1 {
		t.Fatalf("%d model calls: the invocation ran more than once", n)
	}
}

// Regression (found in review, twentieth session): a replay that finds its
// session busy and is requeued stays that replay: its copy keeps the replay
// headers, so it resumes the dead-lettered invocation instead of being
// acked as a redelivery of the dead letter without running.
func TestRequeuedReplayKeepsItsReplayHeaders(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	llm := agenttest.NewScriptedModel(agenttest.Fail(errors.New("boom")), agenttest.Reply(agenttest.Text("Done.")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	e.publish(request("inv-replayed", "hot", "hi"), nil)
	if r := e.await("inv-replayed"); r.Status != envelope.StatusDeadLettered {
		t.Fatalf("first run: result = %+v", r)
	}
	key := session.Key{App: "support", UserID: "u1", SessionID: "hot"}
	// The dead letter's delivery releases the lock just after its result.
	eventually(t, "the session lock", func() bool {
		_, err := e.locker.Acquire(ctx, key, "someone-else", time.Hour)
		return err == nil
	})
	e.publishRaw(e.sc.RequestSubject("support"), mustJSON(t, request("inv-replayed", "hot", "hi")), "replay:inv-replayed:1",
		map[string]string{envelope.HeaderResume: "true", envelope.HeaderReplayCount: "1"})
	eventually(t, "the replay requeued", func() bool { return w.count("support", "requeued") >= 1 })
	if err := e.locker.Release(ctx, key, "someone-else"); err != nil {
		t.Fatal(err)
	}
	if r := e.await("inv-replayed"); r.Status != envelope.StatusCompleted || r.Attempts < 3 {
		t.Fatalf("replay: result = %+v, want completed after 3 deliveries or more", r)
	}
	if n := llm.Calls(); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}
