package worker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// A worker whose consumer is deleted under it reports not ready, warns
// once, re-creates the consumer with the fleet's configuration, runs what
// was published meanwhile, and is ready again.
func TestWorkerRecreatesAVanishedConsumer(t *testing.T) {
	e := newEnv(t)
	logs := logtest.New("fetch ended with an error", "re-created it", "fetching again")
	// Ready is asked at the moment the recovery line is written: whoever
	// reads that line must find the worker ready, not a moment later.
	var started atomic.Pointer[worker.Worker]
	atLine := &readyAtLine{next: logs, text: "fetching again", ready: func() error { return started.Load().Ready() }}
	e.deps = func(d *worker.Deps) { d.Logger = zerolog.New(atLine).Level(zerolog.DebugLevel) }
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("Hello.")))
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	started.Store(w.w)
	if err := w.w.Ready(); err != nil {
		t.Fatalf("Ready before = %v", err)
	}

	ctx := context.Background()
	stream, err := e.js.Stream(ctx, e.sc.RequestsStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteConsumer(ctx, e.sc.WorkerConsumer); err != nil {
		t.Fatal(err)
	}
	logs.Wait(t, "fetch ended with an error")
	e.publish(request("inv-after-delete", "s1", "hello"), nil)
	if res := e.await("inv-after-delete"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	logs.Wait(t, "re-created it")
	logs.Wait(t, "fetching again")
	if err := atLine.result(); err != nil {
		t.Errorf("Ready when the recovery was logged = %v", err)
	}
	if err := w.w.Ready(); err != nil {
		t.Errorf("Ready after recovery = %v", err)
	}
	if n := logs.Count("fetch ended with an error"); n != 1 {
		t.Errorf("%d warnings for one lost consumer, want 1", n)
	}

	cons, err := e.js.Consumer(ctx, e.sc.RequestsStream, e.sc.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	got, want := cons.CachedInfo().Config, e.sc.WorkerConsumerConfig()
	if got.AckWait != want.AckWait || got.MaxAckPending != want.MaxAckPending || got.MaxDeliver != want.MaxDeliver ||
		got.FilterSubject != want.FilterSubject || got.AckPolicy != want.AckPolicy {
		t.Errorf("re-created consumer config = %+v, want %+v", got, want)
	}

	w.shutdown(t)
	if err := w.w.Ready(); !errors.Is(err, worker.ErrStopped) {
		t.Errorf("Ready after Run returned = %v, want ErrStopped", err)
	}
}

// readyAtLine passes log lines to next and calls ready when the first line
// holding text is written, before that line reaches next.
type readyAtLine struct {
	next  io.Writer
	text  string
	ready func() error

	mu     sync.Mutex
	called bool
	err    error
}

func (r *readyAtLine) Write(p []byte) (int, error) {
	r.mu.Lock()
	if !r.called && bytes.Contains(p, []byte(r.text)) {
		r.called, r.err = true, r.ready()
	}
	r.mu.Unlock()
	return r.next.Write(p)
}

// result returns what ready returned at the line.
func (r *readyAtLine) result() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.called {
		return errors.New("the line was never written")
	}
	return r.err
}

// Ready wraps the fetch error and the failed restore, so whoever reads it
// can tell why the worker consumes nothing.
func TestReadyNamesTheFetchError(t *testing.T) {
	e := newEnv(t)
	logs := logtest.New("fetch ended with an error")
	e.deps = func(d *worker.Deps) { d.Logger = zerolog.New(logs) }
	w := e.startWorker("w1", e.supportAgent(agenttest.NewScriptedModel()), worker.Config{})
	// Deleting the stream takes the consumer with it; the worker does not
	// re-create a stream (streams.Ensure does at start-up).
	if err := e.js.DeleteStream(context.Background(), e.sc.RequestsStream); err != nil {
		t.Fatal(err)
	}
	logs.Wait(t, "fetch ended with an error")
	// The pull in flight ends with "consumer deleted", the next ones with
	// "no responders"; restoring the consumer finds no stream.
	err := w.w.Ready()
	if !errors.Is(err, jetstream.ErrConsumerDeleted) && !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("Ready = %v, want it to wrap the fetch error", err)
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("Ready = %v, want it to wrap the failed restore (%v)", err, jetstream.ErrStreamNotFound)
	}
}
