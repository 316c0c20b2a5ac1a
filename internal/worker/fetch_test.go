package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentfleet/agentfleet/internal/logtest"
	"github.com/agentfleet/agentfleet/internal/streams"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/session"
	"github.com/agentfleet/agentfleet/pkg/dlq"
)

// goneJS binds New to goneConsumer once, then finds no stream.
type goneJS struct {
	jetstream.JetStream
	mu    sync.Mutex
	calls int
	cons  jetstream.Consumer
}

func (j *goneJS) Consumer(context.Context, string, string) (jetstream.Consumer, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	if j.calls == 1 {
		return j.cons, nil
	}
	return nil, jetstream.ErrStreamNotFound
}

// goneConsumer fails every fetch the way a deleted consumer does and
// reports each attempt.
type goneConsumer struct {
	jetstream.Consumer
	fetches chan time.Time
}

func (c *goneConsumer) CachedInfo() *jetstream.ConsumerInfo { return &jetstream.ConsumerInfo{} }

func (c *goneConsumer) Fetch(int, ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	select {
	case c.fetches <- time.Now():
	default:
	}
	return nil, nats.ErrNoResponders
}

// A fetch that keeps failing (the consumer and its stream are gone) is
// retried after a growing delay, not at once, logged once at warning level
// (not once per attempt), and keeps the worker not ready.
func TestFailingFetchesBackOffAndWarnOnce(t *testing.T) {
	cons := &goneConsumer{fetches: make(chan time.Time, 16)}
	js := &goneJS{cons: cons}
	logs := logtest.New()
	ag := &agent.Agent{Name: "support", Model: agenttest.NewScriptedModel()}
	w, err := New(context.Background(), Config{Name: "w1", Concurrency: 2}, Deps{
		JS: js, Streams: streams.Config{}.WithDefaults(),
		Agents:      map[string]*agent.Runner{ag.Name: {Agent: ag, Sessions: session.NewMemory()}},
		Locker:      session.NewMemoryLocker(),
		Invocations: session.NewMemoryInvocations(time.Hour),
		DLQ:         dlq.NewPublisher(js, dlq.Config{}),
		Logger:      zerolog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The pauses between attempts are recorded, not waited.
	pauses := make(chan time.Duration, 16)
	w.pause = func(ctx context.Context, d time.Duration) {
		select {
		case pauses <- d:
		case <-ctx.Done():
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	var waits []time.Duration
	for len(waits) < 6 {
		select {
		case d := <-pauses:
			waits = append(waits, d)
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d failed fetches", len(waits))
		}
	}
	// From 0.5s doubling up to 15s, with ±50% jitter: every pause at least
	// half its step, and the sixth (step 8s) well above the first (0.5s).
	step := fetchRetryInitial
	for i, d := range waits {
		if d < step/2 || d > fetchRetryMax*3/2 {
			t.Errorf("pause %d = %v, want within [%v, %v]", i+1, d, step/2, fetchRetryMax*3/2)
		}
		step = min(step*2, fetchRetryMax)
	}
	if waits[5] <= waits[0] {
		t.Errorf("pauses %v do not grow", waits)
	}
	err = w.Ready()
	if !errors.Is(err, nats.ErrNoResponders) || !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("Ready = %v, want the fetch error and the failed restore", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := logs.Count(`"level":"warn"`); n != 1 {
		t.Errorf("%d warnings for %d failed fetches, want 1:\n%s", n, len(waits), logs.String())
	}
	if !errors.Is(w.Ready(), ErrStopped) {
		t.Errorf("Ready after Run = %v, want ErrStopped", w.Ready())
	}
}
