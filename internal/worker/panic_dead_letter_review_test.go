package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/replayer"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// switchablePanicSessions panics loading a session while on is set (a bug
// hit after the invocation's running record was written), and behaves as
// its Memory once the "fix" is deployed (on cleared).
type switchablePanicSessions struct {
	*session.Memory
	on *atomic.Bool
}

func (s switchablePanicSessions) GetOrCreate(ctx context.Context, k session.Key) (*session.Session, error) {
	if s.on.Load() {
		panic("session decoder bug")
	}
	return s.Memory.GetOrCreate(ctx, k)
}

// Regression (found in review, seventeenth session): before c3be42a a
// message whose runs kept panicking was dead-lettered by the run limit
// (deadLetter: the record becomes dead_lettered, so a replay after the fix
// starts a fresh count and runs). afterPanic now dead-letters it first,
// through deadLetterRaw, which never touches the invocation record: the
// record stays "running" with MaxDeliveries attempts, and the replay the
// entry asks for ("replay after the fix") is dead-lettered again at once by
// the run limit, without running.
func TestPanicDeadLetterAfterARunStartedCanBeReplayed(t *testing.T) {
	e := newEnv(t)
	var bug atomic.Bool
	bug.Store(true)
	e.deps = func(d *worker.Deps) {
		for _, r := range d.Agents {
			r.Sessions = switchablePanicSessions{Memory: e.sessions, on: &bug}
		}
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, InfraBackoffMax: time.Millisecond})
	const id = "inv-review-panic-run"
	e.publish(request(id, "s1", "hi"), nil)
	res := e.await(id)
	if res.Status != envelope.StatusDeadLettered || res.ErrorClass != "UNKNOWN" {
		t.Fatalf("first result %+v, want dead_lettered UNKNOWN", res)
	}
	en := e.dlqEntries()
	if len(en) != 1 {
		t.Fatalf("%d DLQ entries, want 1", len(en))
	}
	rec, err := e.invs.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.InvocationDeadLettered {
		t.Errorf("invocation record after the panic dead letter: status %q (attempts %d), want %q like the result",
			rec.Status, rec.Attempts, session.InvocationDeadLettered)
	}

	// The fix is deployed; the on-call replays the entry (--force --class UNKNOWN).
	bug.Store(false)
	eventually(t, "the first message terminated", func() bool { return e.pending() == 0 })
	if _, err := e.js.PublishMsg(context.Background(), replayer.ReplayMsg(e.sc, en[0])); err != nil {
		t.Fatal(err)
	}
	if res := e.await(id); res.Status != envelope.StatusCompleted {
		t.Errorf("replay after the fix: result %s %s %q, want completed", res.Status, res.ErrorClass, res.UserMessage)
		for _, x := range e.dlqEntries()[1:] {
			t.Logf("new DLQ entry: %s %q", x.Class, x.Reason)
		}
	}
}

// busyThenPanicLocker reports the session busy busy times, then panics
// once (a transient bug: a race, a nil reply on a connection blip), then
// works.
type busyThenPanicLocker struct {
	session.Locker
	busy  int
	calls atomic.Int32
}

func (l *busyThenPanicLocker) Acquire(ctx context.Context, k session.Key, owner string, d time.Duration) (*session.Lease, error) {
	switch n := int(l.calls.Add(1)); {
	case n <= l.busy:
		return nil, session.ErrLocked
	case n == l.busy+1:
		panic("transient lock client bug")
	}
	return l.Locker.Acquire(ctx, k, owner, d)
}

// Regression (found in review, seventeenth session): afterPanic dead-letters on the
// first panic of any delivery numbered MaxDeliveries or more, and
// NumDelivered counts the busy-session Naks the design says never count
// towards the delivery limit. A request that waited behind a busy session
// and then hit one transient panic is dead-lettered UNKNOWN (for a person)
// without a single retry; before c3be42a it went back and completed.
func TestOnePanicAfterBusyNaksIsRetried(t *testing.T) {
	e := newEnv(t)
	e.deps = func(d *worker.Deps) {
		d.Locker = &busyThenPanicLocker{Locker: d.Locker, busy: 3}
		d.Gate = nil
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("hello")))
	e.startWorker("w1", e.supportAgent(llm), worker.Config{MaxDeliveries: 2, BusyDelay: time.Millisecond, InfraBackoffMax: time.Millisecond})
	const id = "inv-review-busy-panic"
	e.publish(request(id, "s1", "hi"), nil)
	if res := e.await(id); res.Status != envelope.StatusCompleted {
		t.Errorf("result %s %s after 3 busy Naks and one panic, want completed (the panic was the first)", res.Status, res.ErrorClass)
		for _, x := range e.dlqEntries() {
			t.Logf("DLQ entry: %s %q", x.Class, x.Reason)
		}
	}
}
