package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/natstest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/internal/streams/streamstest"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// A worker told a longer AckWait than its consumer has (a library user's
// two settings apart, or a fleet part-way through a change) heartbeats
// within the consumer's: every AckWait/3 of the shorter, with a warning.
// With its own 60s it would heartbeat every 20s against a 6s AckWait, and
// every running invocation would be redelivered to another worker.
func TestHeartbeatsFollowTheConsumersAckWait(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	for _, tc := range []struct {
		name             string
		consumer, worker time.Duration
		wantHeartbeat    time.Duration
		wantWarning      bool
	}{
		{"consumer shorter", 6 * time.Second, 60 * time.Second, 2 * time.Second, true},
		{"worker shorter", 60 * time.Second, 9 * time.Second, 3 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := streamstest.UniqueConfig()
			sc.WorkerAckWait = tc.consumer
			if _, err := streams.Ensure(context.Background(), js, sc); err != nil {
				t.Fatal(err)
			}
			logs := logtest.New()
			w := newAckWaitWorker(t, js, sc, Config{Name: "w1", AckWait: tc.worker}, logs)
			if got := w.heartbeatInterval(); got != tc.wantHeartbeat {
				t.Errorf("heartbeat every %v, want %v", got, tc.wantHeartbeat)
			}
			if warned := logs.Count("heartbeats follow the consumer's") == 1; warned != tc.wantWarning {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.wantWarning, logs.String())
			}
		})
	}
}

// The consumer's AckWait changed after the worker started (another
// process's streams.Ensure, a fleet part-way through a change of
// ack_wait): Run reads it again every ConsumerCheckInterval and the
// heartbeats follow it down, and back up to the worker's own. (New read it
// once: a worker started at 60s went on heartbeating every 20s against a
// consumer lowered to 6s, and its running invocations were redelivered.)
func TestHeartbeatsFollowAConsumerAckWaitChangedWhileRunning(t *testing.T) {
	js, _, _ := natstest.JetStream(t)
	sc := streamstest.UniqueConfig()
	sc.WorkerAckWait = 60 * time.Second
	ctx := context.Background()
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	logs := logtest.New()
	w := newAckWaitWorker(t, js, sc, Config{Name: "w1", AckWait: 60 * time.Second, FetchWait: 20 * time.Millisecond, ConsumerCheckInterval: 10 * time.Millisecond}, logs)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor := func(want time.Duration) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for w.heartbeatInterval() != want {
			if time.Now().After(deadline) {
				t.Fatalf("heartbeat every %v, want %v:\n%s", w.heartbeatInterval(), want, logs.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(20 * time.Second)
	sc.WorkerAckWait = 6 * time.Second // another process's Ensure
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	waitFor(2 * time.Second)
	sc.WorkerAckWait = 90 * time.Second // raised past the worker's own
	if _, err := streams.Ensure(ctx, js, sc); err != nil {
		t.Fatal(err)
	}
	waitFor(20 * time.Second)
	if n := logs.Count("heartbeats follow the consumer's"); n != 2 {
		t.Errorf("%d warnings, want one per change:\n%s", n, logs.String())
	}
}

// newAckWaitWorker returns a worker on the streams of sc with in-memory
// stores and a support agent that is never called, logging to logs.
func newAckWaitWorker(t *testing.T, js jetstream.JetStream, sc streams.Config, cfg Config, logs *logtest.Watch) *Worker {
	t.Helper()
	ag := &agent.Agent{Name: "support", Model: agenttest.NewScriptedModel()}
	w, err := New(context.Background(), cfg, Deps{
		JS: js, Streams: sc,
		Agents:      map[string]*agent.Runner{ag.Name: {Agent: ag, Sessions: session.NewMemory()}},
		Locker:      session.NewMemoryLocker(),
		Invocations: session.NewMemoryInvocations(time.Hour),
		DLQ:         dlq.NewPublisher(js, dlq.Config{Stream: sc.DLQStream, Prefix: sc.DLQPrefix}),
		Logger:      zerolog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}
