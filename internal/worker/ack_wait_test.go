package worker

import (
	"context"
	"testing"
	"time"

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
			ag := &agent.Agent{Name: "support", Model: agenttest.NewScriptedModel()}
			w, err := New(context.Background(), Config{Name: "w1", AckWait: tc.worker}, Deps{
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
			if got := w.cfg.heartbeat(); got != tc.wantHeartbeat {
				t.Errorf("heartbeat every %v, want %v", got, tc.wantHeartbeat)
			}
			if warned := logs.Count("heartbeats follow the consumer's") == 1; warned != tc.wantWarning {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.wantWarning, logs.String())
			}
		})
	}
}
