package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/redis/go-redis/v9"

	"github.com/agentfleet/agentfleet/internal/redistest"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/agentfleet/agentfleet/pkg/agent"
	"github.com/agentfleet/agentfleet/pkg/agent/agenttest"
	"github.com/agentfleet/agentfleet/pkg/agent/model"
	"github.com/agentfleet/agentfleet/pkg/agent/session/redissession"
	"github.com/agentfleet/agentfleet/pkg/agent/tool"
	"github.com/agentfleet/agentfleet/pkg/dlq"
	"github.com/agentfleet/agentfleet/pkg/envelope"
)

// The same request published twice inside the duplicate window is stored
// once by JetStream (Nats-Msg-Id = invocation id) and runs once.
func TestDuplicateInsideWindowRunsOnce(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel(refundScript("Refunded.")...)
	w := e.startWorker("w1", e.supportAgent(llm), worker.Config{})
	r := request("inv-twice", "s1", "refund A-1042")
	e.publish(r, nil)
	e.publish(r, nil)
	if res := e.await("inv-twice"); res.Status != envelope.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	eventually(t, "acked", func() bool { return e.pending() == 0 && w.count("support", "completed") == 1 })
	if llm.Calls() != 3 || len(e.orders.Refunds()) != 1 {
		t.Fatalf("ran twice: calls=%d refunds=%d", llm.Calls(), len(e.orders.Refunds()))
	}
}

// Two messages of one session never interleave: the second waits (Nak with
// delay) until the first invocation released the session.
func TestOneSessionNeverInterleaves(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var log []string
	var active atomic.Int32
	var overlap atomic.Bool
	step := tool.MustFunc("step", "", func(ctx context.Context, _ struct{}) (map[string]any, error) {
		if active.Add(1) > 1 {
			overlap.Store(true)
		}
		defer active.Add(-1)
		mu.Lock()
		log = append(log, tool.FromContext(ctx).InvocationID)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // hold the session while the other message is delivered
		return tool.OK(nil), nil
	})
	var steps []agenttest.Step
	for range 2 {
		steps = append(steps, agenttest.Reply(agenttest.Call("step", nil)), agenttest.Reply(agenttest.Call("step", nil)), agenttest.Reply(agenttest.Text("ok")))
	}
	llm := agenttest.NewScriptedModel(steps...)
	ag := e.supportAgent(llm, step)
	// The scripted model is one queue of steps: the script only works if the
	// session lock serialises the two invocations, as it must.
	e.startWorker("w1", ag, worker.Config{Concurrency: 4})
	e.startWorker("w2", ag, worker.Config{Concurrency: 4})
	e.publish(request("inv-a", "shared", "first"), nil)
	e.publish(request("inv-b", "shared", "second"), nil)
	for _, id := range []string{"inv-a", "inv-b"} {
		if res := e.await(id); res.Status != envelope.StatusCompleted {
			t.Fatalf("%s: %+v", id, res)
		}
	}
	if overlap.Load() {
		t.Fatal("two invocations of one session ran tools at the same time")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(log) != 4 || log[0] != log[1] || log[2] != log[3] || log[0] == log[2] {
		t.Fatalf("tool steps interleaved across invocations: %v", log)
	}
}

// Row: own infrastructure down (Redis) before anything ran → NakWithDelay
// with backoff; the message stays, the model is never called.
func TestRedisDownBeforeAnythingRanNaks(t *testing.T) {
	e := newEnv(t)
	opts, err := redis.ParseURL(redistest.ClosedURL())
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxRetries = -1
	down := redis.NewClient(opts)
	t.Cleanup(func() { down.Close() })
	locker, err := redissession.NewLocker(down, redissession.Config{Prefix: "x:"})
	if err != nil {
		t.Fatal(err)
	}
	llm := agenttest.NewScriptedModel(agenttest.Reply(agenttest.Text("never")))
	m := worker.NewMetrics(nil)
	w, err := worker.New(context.Background(), worker.Config{Name: "w-down", AckWait: 3 * time.Second, FetchWait: 200 * time.Millisecond, InfraBackoffMax: 100 * time.Millisecond},
		worker.Deps{JS: e.js, Streams: e.sc, Agents: map[string]*agent.Runner{"support": {Agent: e.supportAgent(llm), Sessions: e.sessions}},
			Locker: locker, Invocations: e.invs, DLQ: dlq.NewPublisher(e.js, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix}), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	e.publish(request("inv-redis-down", "s1", "hi"), nil)
	eventually(t, "two infrastructure naks", func() bool { return testutilValue(m.Messages.WithLabelValues("support", "nak_infra")) >= 2 })
	if llm.Calls() != 0 || e.pending() != 1 || len(e.dlqEntries()) != 0 {
		t.Fatalf("calls=%d pending=%d dlq=%d: nothing may run or be lost while Redis is down", llm.Calls(), e.pending(), len(e.dlqEntries()))
	}
}

// unresolvableTool declares a parameter pattern Go's regexp refuses.
type unresolvableTool struct{}

func (unresolvableTool) Name() string        { return "lookup" }
func (unresolvableTool) Description() string { return "test tool" }
func (unresolvableTool) Declaration() *model.ToolDeclaration {
	return &model.ToolDeclaration{Name: "lookup", Parameters: &jsonschema.Schema{Type: "object",
		Properties: map[string]*jsonschema.Schema{"id": {Type: "string", Pattern: `^(?!x)`}}}}
}
func (unresolvableTool) Run(context.Context, map[string]any) (map[string]any, error) {
	return tool.OK(nil), nil
}

// A worker refuses to start with a tool whose schema does not resolve
// (Runner.CheckTools), rather than dead-letter every invocation that calls it.
func TestWorkerRefusesAToolWithABrokenSchema(t *testing.T) {
	e := newEnv(t)
	llm := agenttest.NewScriptedModel()
	_, err := worker.New(context.Background(), worker.Config{Name: "w-schema"},
		worker.Deps{JS: e.js, Streams: e.sc, Agents: map[string]*agent.Runner{"support": {Agent: e.supportAgent(llm, unresolvableTool{}), Sessions: e.sessions}},
			Locker: e.locker, Invocations: e.invs, DLQ: dlq.NewPublisher(e.js, dlq.Config{Stream: e.sc.DLQStream, Prefix: e.sc.DLQPrefix})})
	var se *tool.SchemaError
	if !errors.As(err, &se) || se.Tool != "lookup" {
		t.Fatalf("New = %v, want a *tool.SchemaError for lookup", err)
	}
}
