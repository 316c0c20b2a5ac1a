package worker_test

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// refusingLocker is a Locker whose renewals by the first owner that renews
// fail with ErrNotOwner while refuse is set, as when another worker took
// the session over. Other owners (the redelivery's) renew as usual: the
// completion on an unfenced gate renews the lock once before it records.
type refusingLocker struct {
	session.Locker
	refuse atomic.Bool
	mu     sync.Mutex
	first  string // the first owner that renewed
}

func (l *refusingLocker) Renew(ctx context.Context, key session.Key, owner string, lease time.Duration) (*session.Lease, error) {
	l.mu.Lock()
	if l.first == "" {
		l.first = owner
	}
	first := l.first == owner
	l.mu.Unlock()
	if first && l.refuse.Load() {
		return nil, session.ErrNotOwner
	}
	return l.Locker.Renew(ctx, key, owner, lease)
}

// Losing the session lock mid-invocation stops the run at its next step
// boundary: the model is not called again, the message goes back
// (nak_stopped), and the redelivery, holding the lock, finishes the
// invocation.
func TestLostSessionLockStopsAtTheNextStepBoundary(t *testing.T) {
	e := newEnv(t)
	locker := &refusingLocker{Locker: e.locker}
	logs := logtest.New("session lock lost")
	e.deps = func(d *worker.Deps) {
		d.Locker = locker
		d.Logger = zerolog.New(io.MultiWriter(logs, zerolog.NewTestWriter(t))).Level(zerolog.DebugLevel)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := tool.MustFunc("slow_lookup", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		once.Do(func() { close(entered) })
		<-release
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("slow_lookup", nil)),
		agenttest.Reply(agenttest.Text("Looked it up.")),
	)
	w := e.startWorker("w1", e.supportAgent(llm, slow), worker.Config{SessionLease: 300 * time.Millisecond})
	e.publish(request("inv-lost", "s1", "look it up"), nil)
	<-entered
	locker.refuse.Store(true) // the next renewal finds another holder
	logs.Wait(t, "session lock lost")
	close(release)
	// A run that went on would have called the model again and completed
	// without a Nak.
	eventually(t, "the stopped run's message put back", func() bool { return w.count("support", "nak_stopped") == 1 })
	locker.refuse.Store(false)
	if res := e.await("inv-lost"); res.Status != envelope.StatusCompleted || res.Content != "Looked it up." {
		t.Fatalf("result = %+v", res)
	}
	if n := llm.Calls(); n != 2 {
		t.Fatalf("model calls = %d; want 2 (the stopped run's first, the redelivery's last)", n)
	}
}

// A run longer than AckWait is not redelivered: the worker sends
// InProgress every AckWait/3 while it runs (counted on the ack subjects
// here), and none once it has finished.
func TestHeartbeatsKeepALongRunFromRedelivery(t *testing.T) {
	e := newEnv(t)
	var beats atomic.Int32
	fourBeats := make(chan struct{})
	sub, err := e.nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) {
		if string(m.Data) == "+WPI" && beats.Add(1) == 4 {
			close(fourBeats)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	slow := tool.MustFunc("slow_lookup", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		<-fourBeats // past AckWait (3 s here; a beat every second)
		return tool.OK(nil), nil
	})
	llm := agenttest.NewScriptedModel(
		agenttest.Reply(agenttest.Call("slow_lookup", nil)),
		agenttest.Reply(agenttest.Text("Looked it up.")),
	)
	w := e.startWorker("w1", e.supportAgent(llm, slow), worker.Config{})
	e.publish(request("inv-long", "s1", "look it up"), nil)
	res := e.await("inv-long")
	if res.Status != envelope.StatusCompleted || res.Attempts != 1 {
		t.Fatalf("result = %+v; want completed on the first delivery", res)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 && w.count("support", "completed") == 1 })
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	after := beats.Load()
	// One more heartbeat interval: a heartbeat still armed would beat now.
	time.Sleep(1500 * time.Millisecond)
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := beats.Load(); n != after {
		t.Fatalf("%d InProgress sent after the run ended", n-after)
	}
}
