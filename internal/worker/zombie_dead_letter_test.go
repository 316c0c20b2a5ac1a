package worker_test

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
	"github.com/agentfleet/agentfleet/pkg/taxonomy"
)

// crashFreeze simulates a worker that froze (a long GC or VM pause, or a
// network partition): while frozen its session-lock renewals do not reach
// Redis and its InProgress heartbeats do not reach NATS. Its in-flight
// model call is blocked by the test meanwhile.
type crashFreeze struct{ frozen atomic.Bool }

type crashFreezeLocker struct {
	session.Locker
	f *crashFreeze
}

func (l crashFreezeLocker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	if l.f.frozen.Load() {
		return nil, errors.New("crash test: renewal did not reach redis (frozen)")
	}
	return l.Locker.Renew(ctx, key, owner, lease)
}

type crashFreezeJS struct {
	jetstream.JetStream
	f *crashFreeze
}

func (j crashFreezeJS) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	c, err := j.JetStream.Consumer(ctx, stream, name)
	if err != nil {
		return nil, err
	}
	return crashFreezeConsumer{Consumer: c, f: j.f}, nil
}

type crashFreezeConsumer struct {
	jetstream.Consumer
	f *crashFreeze
}

func (c crashFreezeConsumer) Fetch(n int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	b, err := c.Consumer.Fetch(n, opts...)
	if err != nil {
		return nil, err
	}
	out := make(chan jetstream.Msg)
	go func() {
		defer close(out)
		for m := range b.Messages() {
			out <- crashFreezeMsg{Msg: m, f: c.f}
		}
	}()
	return &crashFreezeBatch{b: b, msgs: out}, nil
}

type crashFreezeBatch struct {
	b    jetstream.MessageBatch
	msgs chan jetstream.Msg
}

func (b *crashFreezeBatch) Messages() <-chan jetstream.Msg { return b.msgs }
func (b *crashFreezeBatch) Error() error                   { return b.b.Error() }

type crashFreezeMsg struct {
	jetstream.Msg
	f *crashFreeze
}

func (m crashFreezeMsg) InProgress() error {
	if m.f.frozen.Load() {
		return nil // the heartbeat never reaches the server
	}
	return m.Msg.InProgress()
}

// crashBlockingModel signals entered on its call, waits for release, then
// answers with resp or fails with err.
func crashBlockingModel(entered chan<- struct{}, release <-chan struct{}, resp *model.Response, err error) model.Model {
	return model.Func{ModelName: "scripted", Generate: func(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
		return func(yield func(*model.Response, error) bool) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			yield(resp, nil)
		}
	}}
}

// Regression (found in review, eighteenth session): A worker that freezes mid-invocation (its session lease runs out and its
// heartbeats stop) is a zombie once it wakes: the message was redelivered
// and another worker took the session over and is running the invocation.
// The zombie's model call then fails. A zombie that gets a final answer
// writes nothing (the completion is fenced by the lock), but a zombie
// whose run fails dead-letters the invocation with no check that it still
// holds the session: it publishes a DLQ entry and a dead_lettered result,
// and overwrites the running record of the worker that now owns the
// invocation, although its own renewer already reported the lock lost
// ("session lock lost; stopping at the next step boundary" is logged
// first). The owner then completes the invocation: the user gets two
// final results (first "dead_lettered", then "completed"), and on-call
// sees a dead letter (auto-replayable SERVER) for an invocation that
// completed.
//
// Two ways the zombie's failure ends: the model error itself, and (the
// shipped support agent, internal/app.SupportAgent) the taxonomy's
// on-model-error callback answering with a degraded "queued" answer, which
// the zombie also stores into the session B now holds.
func TestZombieWorkerDeadLettersAnInvocationAnotherWorkerCompletes(t *testing.T) {
	t.Run("model error", func(t *testing.T) { crashZombieDeadLetter(t, false) })
	t.Run("degraded answer", func(t *testing.T) { crashZombieDeadLetter(t, true) })
}

func crashZombieDeadLetter(t *testing.T, degrade bool) {
	e := newEnv(t)
	_, locker, invs, gate, svc := redisSessionStores(t)
	freeze := &crashFreeze{}

	// Worker A: one slot (so it cannot pick the redelivery up itself), a
	// short lease, its lock renewals and heartbeats cut while frozen.
	aEntered, aRelease := make(chan struct{}, 1), make(chan struct{})
	aModel := crashBlockingModel(aEntered, aRelease, nil,
		&model.ProviderError{Provider: "test", StatusCode: 503, Status: "UNAVAILABLE"})
	e.deps = func(d *worker.Deps) {
		d.JS = crashFreezeJS{JetStream: d.JS, f: freeze}
		d.Locker = crashFreezeLocker{Locker: locker, f: freeze}
		d.Invocations, d.Gate = invs, gate
		d.Agents["support"].Sessions = svc
	}
	aAgent := e.supportAgent(aModel)
	if degrade {
		aAgent.Callbacks.OnModelError = []agent.OnModelErrorCallback{taxonomy.OnModelError(taxonomy.CallbackOptions{})}
	}
	a := e.startWorker("wA", aAgent, worker.Config{Concurrency: 1, SessionLease: 600 * time.Millisecond})

	e.publish(request("inv-zombie", "sz", "hello"), nil)
	<-aEntered
	freeze.frozen.Store(true)

	// Worker B: healthy; it gets the redelivery once A's heartbeats have
	// stopped for AckWait, and the session once A's lease has run out.
	bEntered, bRelease := make(chan struct{}, 1), make(chan struct{})
	bModel := crashBlockingModel(bEntered, bRelease, agenttest.Text("Done."), nil)
	e.deps = func(d *worker.Deps) {
		d.Locker, d.Invocations, d.Gate = locker, invs, gate
		d.Agents["support"].Sessions = svc
	}
	e.startWorker("wB", e.supportAgent(bModel), worker.Config{})
	select {
	case <-bEntered:
	case <-time.After(20 * time.Second):
		t.Fatal("the redelivery never reached worker B")
	}

	// A wakes up; its model call fails. Whatever A does with its run, it
	// must not end the invocation that B now owns.
	freeze.frozen.Store(false)
	close(aRelease)
	eventually(t, "worker A to finish its run", func() bool {
		for _, action := range []string{"dead_lettered", "failed", "completed", "nak_stopped", "nak_infra", "duplicate"} {
			if a.count("support", action) > 0 {
				return true
			}
		}
		return false
	})
	close(bRelease)

	// Every result published for the invocation, up to B's completion.
	var got []*envelope.Result
	deadline := time.After(20 * time.Second)
	for len(got) == 0 || got[len(got)-1].Status != envelope.StatusCompleted {
		select {
		case r := <-e.results:
			if r.InvocationID == "inv-zombie" {
				got = append(got, r)
			}
		case <-deadline:
			t.Fatalf("no completed result; results so far: %s", crashStatuses(got))
		}
	}
	if len(got) != 1 {
		t.Errorf("the user got %d final results for one request (%s); want exactly one, the completion",
			len(got), crashStatuses(got))
	}
	for _, en := range e.dlqEntries() {
		if en.InvocationID == "inv-zombie" {
			t.Errorf("a dead letter (%s: %q, worker %s) exists for an invocation that completed", en.Class, en.Reason, en.Worker)
		}
	}
	if degrade {
		sess, err := svc.Get(context.Background(), session.Key{App: "support", UserID: "u1", SessionID: "sz"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range sess.InvocationEvents("inv-zombie") {
			if ev.Substituted {
				t.Errorf("the zombie's degraded answer %q is stored in the session of the invocation B completed", ev.Content.Text())
			}
		}
	}
}

func crashStatuses(rs []*envelope.Result) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += string(r.Status) + " " + r.ErrorClass
	}
	return "[" + s + "]"
}
